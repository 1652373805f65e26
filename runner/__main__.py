import os
import sys

try:
    from runner.supervision.interrupt import remember_interrupts

    remember_interrupts()
    from runner.cli.main import main

    sys.exit(main())
except KeyboardInterrupt:
    # Ctrl-C before the runner's own handlers are in place (imports, the preload, the memory
    # estimate): a quiet exit, no traceback; 130 is runner.core.usage.INTERRUPTED (the import itself
    # may be what was interrupted). os._exit: a KeyboardInterrupt that passed through C code
    # running Python (PyRun_*) leaves CPython set to die by SIGINT at exit, whatever the status.
    import logging

    print("python -m runner: interrupted", file=sys.stderr, flush=True)
    logging.shutdown()
    os._exit(130)
except BrokenPipeError:
    # `python -m runner catalog | head`: the reader had enough, which is no error to print.
    # stdout goes nowhere from here, so the flush at exit cannot raise again; 141 (128 +
    # SIGPIPE) is what a program the closed pipe ended exits with (runner.core.usage.CUT_SHORT).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(141)
