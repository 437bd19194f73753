"""The command lines both peers (torch_peer.py, jax_peer.py) share, parsed in one place, and their timing loop (no
library imported here)."""
import time


def time_args(argv, mode):
    """`time CK [MODE [STEPS [BATCH [BLOCKS]]]]`'s values after CK, with both peers' defaults."""
    rest = argv[3:]
    return (rest[0] if rest else mode, int(rest[1]) if len(rest) > 1 else 10, int(rest[2]) if len(rest) > 2 else 8,
            int(rest[3]) if len(rest) > 3 else 3)


def equality_command(argv, check, same_steps):
    """A peer's `check CK ROWS LOSS` or `steps CK0 DATA SEED STEPS BATCH LR WARMUP WANT`: its exit status, or
    None when argv is neither (both peers share the two commands)."""
    if len(argv) == 5 and argv[1] == "check":
        return check(argv[2], argv[3], float(argv[4]))
    if len(argv) == 10 and argv[1] == "steps":
        a = argv[2:]
        same_steps(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), float(a[5]), int(a[6]), float(a[7]))
        return 0
    return None


def fastest_block(step, sync, tokens_per_step, steps, blocks, warmup=3):
    """(the fastest of `blocks` blocks of `steps` calls of step(), in tokens/s; the seconds of the `warmup` calls
    before them, where compilers compile). sync() waits for the work queued so far (JAX runs asynchronously)."""
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    sync()
    warm, best = time.perf_counter() - t0, 0.0
    for _ in range(blocks):
        t1 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        best = max(best, tokens_per_step * steps / (time.perf_counter() - t1))
    return best, warm
