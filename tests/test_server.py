"""The language server, driven over pipes as an editor would: initialize, didOpen → publishDiagnostics (exact
diagnostics), didChange, didSave, didClose, shutdown, exit."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ptx_samples import NCOLS_96

pytest.importorskip("pygls")

TIMEOUT = 60
MSG_ALLOC = ("tcgen05.alloc column count 96 is not a power of two (nCols must be a power of two in [32, 512]) "
             "(invalid-ncols)")
LEAK = NCOLS_96.replace("\tld.shared.u32 %r4, [%r3];\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 96;\n",
                        "\tld.shared.u32 %r4, [%r3];\n")
HREF = "https://github.com/tmemlint/tmemlint/blob/v0.3.0/rules/"


class Client:
    """A minimal LSP client over a server subprocess's pipes (Content-Length framing, JSON-RPC 2.0)."""

    def __init__(self, cwd: Path):
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", "tmemlint", "server"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
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
            self.received(json.loads(out.read(int(headers["content-length"]))))

    def received(self, msg: dict) -> None:
        """A message from the server (on the reader thread): queued for ``wait_for``."""
        self.inbox.put(msg)

    def send(self, method: str, params=None, request: bool = False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if request:
            msg["id"] = self.next_id
            self.next_id += 1
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return msg.get("id")

    def wait_for(self, pred):
        """The next message satisfying ``pred`` (others are dropped); fails after TIMEOUT seconds."""
        while True:
            try:
                msg = self.inbox.get(timeout=TIMEOUT)
            except queue.Empty:
                pytest.fail("no message from the server")
            if pred(msg):
                return msg

    def request(self, method: str, params=None):
        i = self.send(method, params, request=True)
        return self.wait_for(lambda m: m.get("id") == i and "method" not in m)

    def diagnostics(self, uri: str) -> dict:
        return self.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                             and m["params"]["uri"] == uri)["params"]

    def close(self):
        try:
            self.request("shutdown")
            self.send("exit")
            self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def rng(line, char, end_line, end_char):
    return {"start": {"line": line, "character": char}, "end": {"line": end_line, "character": end_char}}


@pytest.fixture
def client(tmp_path):
    (tmp_path / "tmemlint.toml").write_text('select = ["TM101", "TM102", "TM902"]\n')
    c = Client(tmp_path)
    yield c
    c.close()


def test_diagnostics_on_open_change_save_close(client, tmp_path):
    init = client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
    caps = init["result"]["capabilities"]
    assert caps["textDocumentSync"]["openClose"] is True and caps["textDocumentSync"]["change"] == 1
    assert init["result"]["serverInfo"]["name"] == "tmemlint"
    client.send("initialized", {})

    uri = (tmp_path / "k.ptx").as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "ptx", "version": 1,
                                                          "text": LEAK}})
    got = client.diagnostics(uri)
    assert got["version"] == 1
    leak = {
        "range": rng(15, 1, 15, 67),
        "message": "96 TMEM columns allocated here are not deallocated on some path to kernel exit (a CTA that "
                   "exits holding TMEM makes the next CTA's tcgen05.alloc wait forever) (tmem-leak)",
        "severity": 1, "code": "TM101", "codeDescription": {"href": HREF + "TM101-tmem-leak.md"},
        "source": "tmemlint",
        "relatedInformation": [{"location": {"uri": uri, "range": rng(19, 1, 19, 2)},
                                "message": "the kernel exits here with the allocation live (warp 0)"}],
    }
    ncols = {"range": rng(15, 1, 15, 67), "message": MSG_ALLOC, "severity": 1, "code": "TM102",
             "codeDescription": {"href": HREF + "TM102-invalid-ncols.md"}, "source": "tmemlint"}
    assert got["diagnostics"] == [leak, ncols]

    fixed = LEAK.replace("[%r3], 96;", "[%r3], 96; // tmemlint: disable=TM101,TM102")
    client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                           "contentChanges": [{"text": fixed}]})
    got = client.diagnostics(uri)
    assert (got["version"], got["diagnostics"]) == (2, [])

    unused = fixed.replace("\tmov.u32 %r1, %tid.x;", "\tmov.u32 %r1, %tid.x; // tmemlint: disable=TM102")
    client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                           "contentChanges": [{"text": unused}]})
    got = client.diagnostics(uri)
    assert got["diagnostics"] == [{
        "range": rng(10, 22, 10, 48),
        "message": "unused suppression: TM102 (invalid-ncols) reported nothing on this line (unused-suppression)",
        "severity": 2, "code": "TM902", "codeDescription": {"href": HREF + "TM902-unused-suppression.md"},
        "source": "tmemlint", "tags": [1]}]  # DiagnosticTag.Unnecessary

    client.send("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert len(client.diagnostics(uri)["diagnostics"]) == 1
    client.send("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri)["diagnostics"] == []


def test_syntax_error_and_other_documents(client, tmp_path):
    client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
    client.send("initialized", {})
    txt = (tmp_path / "notes.txt").as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": txt, "languageId": "plaintext", "version": 1,
                                                          "text": "tcgen05.alloc"}})
    uri = (tmp_path / "bad.ptx").as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "ptx", "version": 1,
                                                          "text": ".version 8.7\n.target sm_100a\nfoo bar;\n"}})
    got = client.diagnostics(uri)  # the .txt document got nothing before this
    assert [(d["code"], d["range"]["start"]) for d in got["diagnostics"]] == [("TM900", {"line": 2, "character": 0})]


def test_saving_a_configuration_file_relints_open_documents(client, tmp_path):
    client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
    client.send("initialized", {})
    uri = (tmp_path / "k.ptx").as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "ptx", "version": 1,
                                                          "text": NCOLS_96}})
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["TM102", "TM102"]
    (tmp_path / "tmemlint.toml").write_text('select = ["TM102"]\n[severity]\nTM102 = "info"\n')
    client.send("textDocument/didSave", {"textDocument": {"uri": (tmp_path / "tmemlint.toml").as_uri()}})
    got = client.diagnostics(uri)["diagnostics"]
    assert [(d["code"], d["severity"], d["range"]["start"]["line"]) for d in got] == [("TM102", 3, 15),
                                                                                      ("TM102", 3, 17)]
    (tmp_path / "tmemlint.toml").write_text('selekt = ["TM102"]\n')
    client.send("textDocument/didSave", {"textDocument": {"uri": (tmp_path / "tmemlint.toml").as_uri()}})
    shown = client.wait_for(lambda m: m.get("method") == "window/showMessage")
    assert shown["params"]["type"] == 1
    assert shown["params"]["message"].startswith(f"tmemlint: {tmp_path / 'tmemlint.toml'}: unknown key 'selekt'")
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["TM102", "TM102"]  # defaults
