"""Settings every test relies on, whichever shell started the suite."""

from __future__ import annotations

import signal

# A shell without job control starts background commands (`make test &`, `nohup`) with
# Ctrl-C ignored, and exec'd children inherit that: Python then installs no
# KeyboardInterrupt handler, and every test of what a Ctrl-C does would fail on how the
# suite was launched, not on onrecord. With Python's own handler set here, the children
# the tests start get the default action back (a handled signal is reset on exec; an
# ignored one is not).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
