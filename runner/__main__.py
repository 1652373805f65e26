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
