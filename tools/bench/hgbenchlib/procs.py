"""Processes the bench starts: each one is recorded by its PID, and only those are ever
signalled. stop(): SIGCONT (it may be paused), SIGTERM, a bounded wait, then SIGKILL.
wait_until(): polls a condition with a bound in tries, never a fixed sleep in its place.
Cleanup: every process still recorded is stopped on exit, on an exception, on SIGINT and
on SIGTERM (Procs is a context manager; the signals are turned into an exit)."""

import os
import signal
import subprocess
import sys
import time


class BenchError(Exception):
    """A failure that ends the run with a message (and exit status 1)."""


class Interrupted(BaseException):
    pass


def _on_signal(signum, _frame):
    raise Interrupted(signum)


class Procs:
    def __init__(self, name):
        self.name = name
        self.started = {}  # pid -> (name, Popen)

    def __enter__(self):
        self._old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, kind, value, _tb):
        # Ignore a second Ctrl-C while stopping what was started.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            self.stop_all()
        finally:
            for s, h in self._old.items():
                signal.signal(s, h)
        if kind is Interrupted:
            print(f"{self.name}: interrupted", file=sys.stderr)
            sys.exit(130)
        if kind is BenchError:
            print(f"{self.name}: {value}", file=sys.stderr)
            sys.exit(1)
        return False

    def start(self, name, argv, log=None, cpu=None, env=None, cwd=None):
        """Starts argv (pinned to CPU list cpu with taskset when given), stdout and stderr
        to the file log (or discarded). Returns the PID (taskset execs the program: same
        PID). The child gets a process group of its own, so that a Ctrl-C reaches only the
        bench, which then stops it by its PID."""
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu), *argv]
        out = open(log, "wb") if log else subprocess.DEVNULL
        try:
            p = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                 start_new_session=True)
        except OSError as e:
            raise BenchError(f"cannot start {name} ({argv[0]}): {e}") from e
        finally:
            if log:
                out.close()
        self.started[p.pid] = (name, p)
        return p.pid

    def alive(self, pid):
        entry = self.started.get(pid)
        return entry is not None and entry[1].poll() is None

    def signal(self, pid, sig):
        """Sends sig to a process started here (and still running); False otherwise."""
        if not self.alive(pid):
            return False
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def stop(self, pid, timeout=10.0):
        """SIGCONT, SIGTERM, up to timeout seconds for it to exit, then SIGKILL. A PID not
        started here is left alone. Returns the exit status (None if it was not ours)."""
        entry = self.started.get(pid)
        if entry is None:
            return None
        _, p = entry
        try:
            return self._stop(pid, p, timeout)
        finally:
            # Forgotten only once reaped: if a signal cuts this short, stop_all() still
            # knows the process and stops it again.
            if p.returncode is not None:
                self.started.pop(pid, None)

    @staticmethod
    def _stop(pid, p, timeout):
        if p.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGTERM):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
            try:
                return p.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return p.wait()

    def interrupt(self, pid, timeout=10.0):
        """SIGINT (strace -c prints its table on it), then stop()."""
        if self.signal(pid, signal.SIGINT):
            try:
                self.started[pid][1].wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.stop(pid, timeout)

    def wait(self, pid, timeout):
        """Waits up to timeout seconds for a process started here to exit by itself; its
        exit status, or None if it is still running (then it stays recorded)."""
        entry = self.started.get(pid)
        if entry is None:
            return None
        try:
            rc = entry[1].wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.started.pop(pid, None)
        return rc

    def stop_all(self):
        for pid in list(self.started):
            self.stop(pid)


def wait_until(check, tries, interval, alive=None):
    """Calls check() up to tries times, interval seconds apart, until it is true; False if
    it never is, or as soon as alive() says the process it waits for has exited."""
    for i in range(tries):
        if alive is not None and not alive():
            return False
        if check(i):
            return True
        time.sleep(interval)
    return False


def run(argv, out=None, timeout=None, cpu=None, check=False):
    """Runs argv to completion (bounded by timeout), output to the file out (or captured and
    returned as text). A timeout or a failure to start is reported, not raised, unless
    check: the callers treat a partial dnsperf run like the scripts did (`|| true`)."""
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu), *argv]
    argv = [str(a) for a in argv]
    try:
        if out:
            with open(out, "wb") as f:
                r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=f,
                                   stderr=subprocess.STDOUT, timeout=timeout)
            text = None
        else:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=timeout)
            text = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        if check:
            raise BenchError(f"{argv[0]} took longer than {timeout} s")
        return None
    except OSError as e:
        raise BenchError(f"cannot run {argv[0]}: {e}") from e
    if check and r.returncode != 0:
        raise BenchError(f"{' '.join(argv)} failed ({r.returncode}): {(text or '').strip()[:400]}")
    return text if text is not None else ""


def output(argv, timeout=30):
    """The stdout+stderr of a short command ('' when it cannot be run)."""
    try:
        r = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
