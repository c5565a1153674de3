/* Deaths by signal inside a traced process: which signal ended it, and who sent it
 * (the signal record of kj_spool.h). Plain C: no CUDA, no CUPTI. */
#ifndef KJ_INJECT_SIGNAL_H
#define KJ_INJECT_SIGNAL_H

/**
 * @brief Install the handlers of SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGABRT, SIGBUS, SIGFPE and
 *        SIGILL that write <dir>/p<pid>.signal when the signal's previous action was the default
 *        (then restore it and re-raise, so the process dies as it would have), and call the
 *        previous handler unchanged otherwise. A signal the program ignores is left alone. Call
 *        once, after the spool is open; a handler the program installs later replaces ours.
 * @return the number of signals watched (0..8).
 */
int kj_signal_watch(const char *dir);

/**
 * @brief Put kjoule's handler back in front of a handler installed after it by a library (the
 *        CUDA driver's or CUPTI's, at context creation), so that a signal's sender is still
 *        known when that handler passes the signal on to ours without its details. Ours then
 *        calls it first, as the kernel would have, with the signal's details; it behaves as
 *        before. SIGTERM, SIGINT and SIGHUP only (a fault's handler may leave by siglongjmp),
 *        each once; signals set back to the default or ignored are left alone.
 *        Call after kj_signal_watch, at points where CUDA may have installed handlers (context
 *        creation, each completed activity buffer).
 * @return the number of signals put back behind ours by this call.
 */
int kj_signal_reassert(void);

#endif
