"""The command lines both peers (torch_peer.py, jax_peer.py) share, parsed in one place (no library imported
here)."""


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
