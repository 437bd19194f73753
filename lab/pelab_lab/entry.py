"""The lab's commands (lab/analyse, lab/compare) start here: without the
lab's Python packages (pandas, SciPy, statsmodels, matplotlib: Debian's)
they say what to install instead of ending in a traceback."""
import sys


def run():
    command = sys.argv[1] if len(sys.argv) > 1 else "analyse"
    try:
        from .cli import main
    except ModuleNotFoundError as e:
        print(f"lab/{command}: the lab's Python package {e.name} is not installed; install the lab's packages "
              f"(Debian's, into /usr/bin/python3) with:\n  scripts/install-deps.sh --lab", file=sys.stderr)
        return 1
    return main()
