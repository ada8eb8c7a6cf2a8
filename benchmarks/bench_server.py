"""Editor latency of ``tmemlint server`` (issue 19, item 3): what a user waits for after typing.

1. A 25k-line PTX file (the kernel of ``examples/gemm_leak_bad.ptx`` eleven times under different names): open
   it, then send 20 ``didChange`` ``--interval`` seconds apart, one keystroke each in the sixth kernel: a comment
   typed at the end of a line (every version parses), then ``TYPED`` typed on a new line (every version but the
   last has a syntax error there); report how many diagnostics were published after the keystrokes began, their
   versions, the codes of the last publication, and the time from the last keystroke to the publication of the
   last version.  A fast burst (``--interval 0.03``) is closer together than the debounce (one lint); in a slow
   one (``0.25``) every keystroke outlives the debounce, so lints start and are superseded or published.
2. Per-edit re-lint on the shipped examples (``examples/*.ptx``, ``examples/*.cu``; ``--ptx-only``): one change,
   then the time to its diagnostics (debounce included), median of ``--repeat`` edits.

Usage: ``python benchmarks/bench_server.py [--interval S ...] [--repeat N]``; prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
from collections import Counter
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Client:
    """A minimal LSP client over the server's pipes; every message is time-stamped on arrival."""

    def __init__(self, cwd: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "tmemlint", "server"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode("ascii").partition(":")
                headers[k.strip().lower()] = v.strip()
            msg = json.loads(out.read(int(headers["content-length"])))
            now = time.perf_counter()
            if "id" in msg and "method" in msg:
                self.send_raw({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            self.inbox.put((now, msg))

    def send_raw(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, method: str, params=None, request: bool = False):
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            msg["id"] = self.next_id
            self.next_id += 1
        self.send_raw(msg)
        return time.perf_counter(), msg.get("id")

    def wait(self, pred, timeout: float = 120.0):
        end = time.monotonic() + timeout
        while True:
            t, msg = self.inbox.get(timeout=max(0.01, end - time.monotonic()))
            if pred(msg):
                return t, msg

    def drain(self, seconds: float) -> list:
        out = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                out.append(self.inbox.get(timeout=0.05))
            except queue.Empty:
                pass
        return out

    def close(self) -> None:
        try:
            self.send("shutdown", None, request=True)
            self.send("exit")
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def big_ptx(copies: int = 11) -> str:
    """The shipped leak example's kernel ``copies`` times under distinct names (about 2,430 lines each)."""
    text = (ROOT / "examples" / "gemm_leak_bad.ptx").read_text()
    i = text.index(".visible .entry")
    head, body = text[:i], text[i:]
    name = body.split("(", 1)[0].split()[-1]
    return head + "".join(body.replace(name, f"k{j}_{name}") for j in range(copies))


def is_publish(uri: str):
    return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri


def start(folder: str) -> Client:
    c = Client(folder)
    c.send("initialize", {"processId": os.getpid(), "rootUri": Path(folder).as_uri(),
                          "capabilities": {"window": {"workDoneProgress": True}}}, request=True)
    c.wait(lambda m: m.get("id") == 1)
    c.send("initialized", {})
    return c


#: What the "code" scenario types, one character a keystroke, on a new line of the sixth kernel (20 characters; every
#: prefix but the last is a syntax error in that kernel: TM900 there, the other kernels keep their findings).
TYPED = "add.u32 %r99,%r2,17;"


def burst(folder: str, interval: float, n: int = 20, code: bool = False) -> dict:
    text = big_ptx()
    uri = (Path(folder) / "big.ptx").as_uri()
    c = start(folder)
    try:
        t0, _ = c.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "ptx", "version": 1,
                                                                "text": text}})
        t_open, _ = c.wait(is_publish(uri))
        first = t_open - t0
        lines = text.split("\n")
        at = [i for i, s in enumerate(lines) if "tcgen05.alloc" in s][5]  # in the 6th kernel
        if code:  # an empty new line to type on, already there when the file is opened
            lines.insert(at, "\t")
            text = "\n".join(lines)
        last = 0.0
        for k in range(n):
            if code:
                lines[at] += TYPED[k]
            else:
                lines[at] += " // x" if k == 0 else "x"  # typing a comment at the end of an instruction's line
            last, _ = c.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": k + 2},
                                                        "contentChanges": [{"text": "\n".join(lines)}]})
            time.sleep(interval)
        seen = c.drain(max(3.0, 10 * interval))
        got = [(t, m) for t, m in seen if is_publish(uri)(m)]
        versions = [m["params"]["version"] for _, m in got]
        final = [t for t, m in got if m["params"]["version"] == n + 1]
        return {"lines": text.count("\n"), "interval": interval, "publishes": len(got), "versions": versions,
                "final": dict(sorted(Counter(d["code"] for d in got[-1][1]["params"]["diagnostics"]).items()))
                if got else None,
                "latency": (final[0] - last) if final else None, "open": first,
                "progress": sum(1 for _, m in seen if m.get("method") == "$/progress")}
    finally:
        c.close()


def per_edit(folder: str, repeat: int, ptx_only: bool = False) -> list[tuple[str, int, float]]:
    rows = []
    c = start(folder)
    try:
        cuda = [] if ptx_only else sorted((ROOT / "examples").glob("*.cu"))
        for p in sorted((ROOT / "examples").glob("*.ptx")) + cuda:
            text = p.read_text()
            uri = (Path(folder) / p.name).as_uri()
            c.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "ptx", "version": 1,
                                                             "text": text}})
            c.wait(is_publish(uri))
            times = []
            for k in range(repeat):
                t, _ = c.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": k + 2},
                                                         "contentChanges": [{"text": f"// {k}\n" + text}]})
                t1, _ = c.wait(lambda m: is_publish(uri)(m) and m["params"]["version"] == k + 2)
                times.append(t1 - t)
            rows.append((p.name, text.count("\n"), statistics.median(times)))
    finally:
        c.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--interval", type=float, action="append", help="seconds between keystrokes (repeatable)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ptx-only", action="store_true", help="per-edit timing on the .ptx examples only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for iv, code in [(iv, code) for code in (False, True) for iv in args.interval or [0.03, 0.25]]:
            r = burst(folder, iv, code=code)
            what = f"typing {TYPED!r} on a new line" if code else "typing a comment"
            print(f"25k-line burst, {what}: {r['lines']} lines, 20 keystrokes {iv * 1000:.0f} ms apart: {r['publishes']} "
                  f"publish(es) (versions {r['versions']}), last version {r['latency'] * 1000:.0f} ms after the last "
                  f"keystroke; first diagnostics after open {r['open'] * 1000:.0f} ms; $/progress messages "
                  f"{r['progress']}; final diagnostics {r['final']}")
        for name, lines, t in per_edit(folder, args.repeat, args.ptx_only):
            print(f"per edit: {name} ({lines} lines): diagnostics {t * 1000:.0f} ms after the change "
                  f"(debounce 120 ms included; median of {args.repeat})")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
