/* Whether a kernel's energy window ran at the pace of its timed launches. An energy window is a
 * CUDA graph of the kernel's launches back to back, measured over seconds; its time per launch
 * should be the kernel's timed latency (plus a launch gap of a few microseconds). A window whose
 * launches took far longer (or far less) did other work than the kernel timed alone, something
 * else on the GPU or a stall, and its energy per launch is not the kernel's (one seen on an H200:
 * 195 us a launch against 110 us timed, +29 % energy). */
#ifndef KJ_ENERGY_WINDOW_H
#define KJ_ENERGY_WINDOW_H

/** A window is off pace beyond this ratio of its time per launch to the timed latency, once the
 *  allowance for the launch gap between graph nodes is taken off (or below its inverse). */
#define KJ_WINDOW_PACE_MAX_RATIO 1.3
#define KJ_WINDOW_GAP_ALLOWANCE_NS 2000.0

/**
 * @brief 1 when an energy window's time per launch (window_ns) is off the kernel's timed latency
 *        (timed_ns): above KJ_WINDOW_PACE_MAX_RATIO x timed_ns + KJ_WINDOW_GAP_ALLOWANCE_NS, or
 *        below timed_ns / KJ_WINDOW_PACE_MAX_RATIO - KJ_WINDOW_GAP_ALLOWANCE_NS; 0 when on pace
 *        or when either figure is unknown (not finite or <= 0).
 * @param ratio  where not NULL: window_ns / timed_ns when both are known, else -1
 */
int kj_energy_window_off_pace(double window_ns, double timed_ns, double *ratio);

#endif
