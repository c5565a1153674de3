/* The shared-memory carveout a replayed function is asked for, so that it runs with the L1/shared
 * split its launches had in the program (CUPTI's record of it: unique_kernel.shmem_executed and
 * carveout). docs/replay.md, "The L1/shared split as the program had it". */
#ifndef KJ_REPLAY_CARVEOUT_H
#define KJ_REPLAY_CARVEOUT_H

/**
 * @brief The carveout (percent, 0-100) to set with CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
 *        or -1 for none (the driver chooses).
 * @param override   KJ_REPLAY_CARVEOUT's text (NULL or "" when unset): an integer, clamped to 0-100,
 *                   negative for none; it wins over the trace.
 * @param requested  the carveout the program asked of the function (percent), -1 none or unknown.
 * @param executed   the shared memory per SM the driver gave the traced launch (bytes), -1 unknown.
 * @param uses_shared the launch used shared memory (static or dynamic): an executed figure of 0 is
 *                   then one CUPTI did not give, and counts as unknown.
 * @param per_sm     the replay device's shared memory per SM (bytes); <= 0 unknown.
 * Otherwise the largest whole percentage of per_sm not above executed: the driver rounds a
 * preference up to the next size it has, so a size it has comes back as itself.
 */
int kj_replay_carveout(const char *override, int requested, long executed, int uses_shared, long per_sm);

#endif
