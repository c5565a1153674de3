/* KJ_HOT marks the functions every launch passes through: the compiler puts them together
 * (.text.hot), so a launch touches a few lines and pages of the library's code, not ones spread
 * over all of it. */
#ifndef KJ_INJECT_HOT_H
#define KJ_INJECT_HOT_H

#define KJ_HOT __attribute__((hot))

#endif
