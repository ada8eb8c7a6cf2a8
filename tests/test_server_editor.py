"""The language server driven as an editor drives it (issue 19): initialize with a real client's capabilities
(Neovim 0.11's, trimmed), open/change documents, change the configuration file, hover, code actions, the plan
command.  Exact positions in each negotiated encoding with non-ASCII text before the faults."""

from __future__ import annotations

import json
import textwrap

import pytest

from ptx_samples import NCOLS_96
from test_server import Client, rng

pytest.importorskip("pygls")

ALLOC = "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 96;\n"
DEALLOC = "\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 96;\n"
#: The kernel of test_server.LEAK (no dealloc: TM101 and TM102 at the alloc), with non-ASCII comments before the
#: alloc (line 15), before the exit (line 19), and an unused suppression after non-ASCII text (line 10).
UNICODE = (NCOLS_96.replace(DEALLOC, "")
           .replace(ALLOC, "\t/* αβγ→ 𝔸 */ tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 96;\n")
           .replace("\tret;", "\t/* 𝔸 */ ret;")
           .replace("\tmov.u32 %r1, %tid.x;", "\tmov.u32 %r1, %tid.x; // αβγ→ 𝔸 // tmemlint: disable=TM102"))

#: Per encoding: (alloc start, ret start, TM902 start, length of line 10, length of line 15) in its code units.
#: utf-32 counts code points; utf-16 counts 𝔸 (U+1D538) twice; utf-8 counts α β γ twice, → three times, 𝔸 four.
COLUMNS = {"utf-32": (14, 9, 32, 58, 80), "utf-16": (15, 10, 33, 59, 81), "utf-8": (22, 12, 40, 66, 88)}

NVIM_CAPS = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True, "showMessage": {}},
    "workspace": {"configuration": True, "didChangeWatchedFiles": {"dynamicRegistration": True,
                                                                   "relativePatternSupport": True},
                  "workspaceFolders": True, "applyEdit": True},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": True, "willSave": True},
        "publishDiagnostics": {"relatedInformation": True, "tagSupport": {"valueSet": [1, 2]},
                               "versionSupport": True, "codeDescriptionSupport": True, "dataSupport": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix"]}},
                       "isPreferredSupport": True, "dataSupport": True},
    },
}


class Editor(Client):
    """A client that answers the server's requests as Neovim does: registrations and progress tokens are
    accepted, ``workspace/configuration`` is answered with ``settings`` (a dict per section)."""

    def __init__(self, cwd, settings=None):
        self.settings = settings or {}
        self.requests: list[dict] = []
        super().__init__(cwd)

    def received(self, msg):
        if "id" in msg and "method" in msg:  # a request from the server
            self.requests.append(msg)
            result = None
            if msg["method"] == "workspace/configuration":
                result = [self.settings.get(i.get("section")) for i in msg["params"]["items"]]
            self._respond(msg["id"], result)
        self.inbox.put(msg)

    def _respond(self, i, result):
        body = json.dumps({"jsonrpc": "2.0", "id": i, "result": result}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def start(self, root, encodings=("utf-16",), init_options=None) -> dict:
        caps = json.loads(json.dumps(NVIM_CAPS))
        caps["general"]["positionEncodings"] = list(encodings)
        got = self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": caps,
                                          "initializationOptions": init_options,
                                          "clientInfo": {"name": "Neovim", "version": "0.11.0"}})
        self.send("initialized", {})
        return got["result"]

    def open(self, uri, text, version=1, language="ptx"):
        self.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                            "version": version, "text": text}})

    def change(self, uri, text, version):
        self.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})


@pytest.fixture
def editor(tmp_path):
    (tmp_path / "tmemlint.toml").write_text('select = ["TM101", "TM102", "TM902"]\n')
    e = Editor(tmp_path)
    yield e
    e.close()


def apply(text: str, edits: list[dict], encoding: str) -> str:
    """``text`` with LSP ``edits`` applied, positions read in ``encoding`` (independently of the server's code)."""
    lines = text.split("\n")

    def offset(p):
        line = lines[p["line"]] if p["line"] < len(lines) else ""
        codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
        unit = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
        raw = line.encode(codec)[:p["character"] * unit]
        return sum(len(x) + 1 for x in lines[:p["line"]]) + len(raw.decode(codec))

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        a, b = offset(e["range"]["start"]), offset(e["range"]["end"])
        text = text[:a] + e["newText"] + text[b:]
    return text


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_positions_in_each_encoding(editor, tmp_path, encoding):
    init = editor.start(tmp_path, [encoding])
    assert init["capabilities"]["positionEncoding"] == encoding
    alloc, ret, tm902, len10, len15 = COLUMNS[encoding]
    uri = (tmp_path / "k.ptx").as_uri()
    editor.open(uri, UNICODE)
    got = editor.diagnostics(uri)["diagnostics"]
    assert [(d["code"], d["range"]) for d in got] == [
        ("TM902", rng(10, tm902, 10, tm902 + 26)),
        ("TM101", rng(15, alloc, 15, alloc + 66)),
        ("TM102", rng(15, alloc, 15, alloc + 66))]
    assert got[1]["relatedInformation"][0]["location"]["range"] == rng(19, ret, 19, ret + 1)
    assert got[0]["tags"] == [1]

    # quick fixes: suppress TM101 on its line (the edit at the end of line 15), remove the unused suppression
    acts = editor.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": got[1]["range"],
        "context": {"diagnostics": [got[1]], "triggerKind": 1}})["result"]
    assert [a["title"] for a in acts] == ["Suppress TM101 on this line", "Suppress TM101 in this file"]
    edits = acts[0]["edit"]["changes"][uri]
    assert edits == [{"range": rng(15, len15, 15, len15), "newText": " // tmemlint: disable=TM101"}]
    fixed = apply(UNICODE, edits, encoding)
    assert fixed.split("\n")[15].endswith("[%r3], 96; // tmemlint: disable=TM101")
    acts = editor.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": got[0]["range"],
        "context": {"diagnostics": [got[0]], "triggerKind": 1}})["result"]
    assert [a["title"] for a in acts] == ["Remove the unused suppression"]
    edits = acts[0]["edit"]["changes"][uri]
    assert edits == [{"range": rng(10, tm902 - 1, 10, len10), "newText": ""}]
    fixed = apply(fixed, edits, encoding)
    assert fixed.split("\n")[10] == "\tmov.u32 %r1, %tid.x; // αβγ→ 𝔸"

    editor.change(uri, fixed, 2)  # the fixes leave TM102 only
    got = editor.diagnostics(uri)
    assert (got["version"], [(d["code"], d["range"]) for d in got["diagnostics"]]) == (
        2, [("TM102", rng(15, alloc, 15, alloc + 66))])

    # hover on the alloc, the cursor inside the mnemonic (after the non-ASCII comment)
    hov = editor.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": {"line": 15, "character": alloc + 3}})["result"]
    assert hov["contents"]["value"].split("\n\n")[:3] == [
        "**tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32**", "executed by warp 0",
        "allocation 0: 96 columns into `slot` (warp 0)"]
    assert hov["range"] == rng(15, 0, 15, len15 + len(" // tmemlint: disable=TM101"))


def test_suppression_actions_extend_directives_and_removes_codes(editor, tmp_path):
    editor.start(tmp_path)
    uri = (tmp_path / "k.ptx").as_uri()
    text = (NCOLS_96.replace(DEALLOC, "").replace("[%r3], 96;", "[%r3], 96; // tmemlint: disable=TM102")
            .replace("%tid.x;", "%tid.x; // tmemlint: disable=TM101,TM102"))
    editor.open(uri, text)
    got = editor.diagnostics(uri)["diagnostics"]
    assert [(d["code"], d["range"]["start"]["line"]) for d in got] == [("TM902", 10), ("TM101", 15)]
    acts = editor.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": got[1]["range"],
        "context": {"diagnostics": got, "triggerKind": 1}})["result"]
    assert [a["title"] for a in acts] == ["Remove the unused suppression", "Suppress TM101 on this line",
                                          "Suppress TM101 in this file"]
    fixed = apply(text, acts[1]["edit"]["changes"][uri], "utf-16")
    assert "[%r3], 96; // tmemlint: disable=TM102,TM101\n" in fixed  # added to the directive there
    fixed = apply(fixed, acts[0]["edit"]["changes"][uri], "utf-16")
    assert "\tmov.u32 %r1, %tid.x;\n" in fixed
    fixed = apply(fixed, acts[2]["edit"]["changes"][uri], "utf-16")
    assert fixed.startswith("// tmemlint: disable-file=TM101\n.version")

    # a directive with a used, an unused and an unknown code: the unknown one, then the unused one, goes
    text = NCOLS_96.replace("[%r3], 96;", "[%r3], 96; // tmemlint: disable=TM101,TM102,TM999")
    unknown = "unknown rule 'TM999' in suppression (unused-suppression)"
    unused = "unused suppression: TM101 (tmem-leak) reported nothing on this line (unused-suppression)"
    for v, messages, kept in [(2, [unknown, unused], "disable=TM101,TM102\n"), (3, [unused], "disable=TM102\n")]:
        editor.change(uri, text, v)
        got = editor.diagnostics(uri)["diagnostics"]
        assert [(d["code"], d["range"]["start"]["line"]) for d in got if d["code"] != "TM902"] == [("TM102", 17)]
        got = [d for d in got if d["code"] == "TM902"]
        assert [d["message"] for d in got] == messages
        acts = editor.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": got[0]["range"],
            "context": {"diagnostics": got[:1], "triggerKind": 1}})["result"]
        text = apply(text, acts[0]["edit"]["changes"][uri], "utf-16")
        assert "[%r3], 96; // tmemlint: " + kept in text


CUDA = textwrap.dedent("""\
    #include <cstdint>
    #ifdef SMALL_TILE
    constexpr int kCols = 96;
    #else
    constexpr int kCols = 128;
    #endif

    __global__ void __launch_bounds__(128) k(uint32_t* out) {
      __shared__ uint32_t slot;
      if (threadIdx.x / 32 == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                     :: "r"((uint32_t)__cvta_generic_to_shared(&slot)), "n"(kCols) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
      }
      __syncthreads();
      uint32_t taddr = slot;
      __syncthreads();
      if (threadIdx.x / 32 == 0) {
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "n"(kCols) : "memory");
      }
    }
    """)


def test_configuration_from_the_editor_and_watched_files(tmp_path):
    (tmp_path / "tmemlint.toml").write_text('select = ["TM102", "TM106"]\n')
    e = Editor(tmp_path, settings={"tmemlint": {"ctasPerSm": 2}})
    try:
        e.start(tmp_path, init_options={"tmemlint": {"defines": ["SMALL_TILE"]}})
        reg = e.wait_for(lambda m: m.get("method") == "client/registerCapability")
        [r] = reg["params"]["registrations"]
        assert r["method"] == "workspace/didChangeWatchedFiles"
        assert [w["globPattern"] for w in r["registerOptions"]["watchers"]] == ["**/tmemlint.toml",
                                                                               "**/pyproject.toml"]
        cu = (tmp_path / "k.cuh").as_uri()  # a header is linted too
        e.open(cu, CUDA, language="cuda")
        got = e.diagnostics(cu)["diagnostics"]
        assert [(d["code"], d["range"]["start"]) for d in got] == [("TM102", {"line": 10, "character": 18}),
                                                                   ("TM102", {"line": 18, "character": 18})]
        hpp = (tmp_path / "k.hpp").as_uri()  # a C++ header with inline PTX too
        e.open(hpp, CUDA, language="cpp")
        assert [d["code"] for d in e.diagnostics(hpp)["diagnostics"]] == ["TM102", "TM102"]
        # ctas-per-sm 2 from workspace/configuration: 512 columns per CTA oversubscribe the SM (TM106 warning)
        uri = (tmp_path / "k.ptx").as_uri()
        e.open(uri, NCOLS_96.replace("96;", "512;"))
        got = e.diagnostics(uri)["diagnostics"]
        assert [(d["code"], d["severity"], d["range"]["start"]["line"]) for d in got] == [("TM106", 2, 15)]
        assert "x 2 CTAs per SM (configuration)" in got[0]["message"]

        # the editor's settings change: the server asks for them again and lints again (ctas-per-sm 1: no TM106)
        e.settings = {"tmemlint": {"ctas-per-sm": 1}}
        e.send("workspace/didChangeConfiguration", {"settings": None})
        assert e.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                          and m["params"]["uri"] == uri and not m["params"]["diagnostics"])

        # the configuration file changes on disk: the watched-files notification re-lints the open documents
        (tmp_path / "tmemlint.toml").write_text('select = ["TM102"]\ndefines = []\n[severity]\nTM102 = "info"\n')
        e.send("workspace/didChangeWatchedFiles", {"changes": [{"uri": (tmp_path / "tmemlint.toml").as_uri(),
                                                                "type": 2}]})
        want = {cu: [("TM102", 3), ("TM102", 3)], hpp: [("TM102", 3), ("TM102", 3)], uri: []}
        seen: dict = {}
        while seen != want:  # (a publish of the lints the settings change started may come first)
            p = e.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")["params"]
            seen[p["uri"]] = [(d["code"], d["severity"]) for d in p["diagnostics"]]

        # a broken configuration: shown once, the defaults are used
        (tmp_path / "tmemlint.toml").write_text('defines = "SMALL_TILE"\n')
        e.send("workspace/didChangeWatchedFiles", {"changes": [{"uri": (tmp_path / "tmemlint.toml").as_uri(),
                                                                "type": 2}]})
        shown = e.wait_for(lambda m: m.get("method") == "window/showMessage")["params"]
        assert shown["message"] == (f"tmemlint: {tmp_path / 'tmemlint.toml'}: defines: must be a list of "
                                    "\"NAME[=VALUE]\" strings or a table NAME = VALUE (got 'SMALL_TILE')")
    finally:
        e.close()


def test_only_the_newest_version_is_published(editor, tmp_path):
    """20 changes in a burst (closer together than the debounce): one publish, of the last version."""
    editor.start(tmp_path)
    uri = (tmp_path / "k.ptx").as_uri()
    leak = NCOLS_96.replace(DEALLOC, "")
    editor.open(uri, leak)
    assert editor.diagnostics(uri)["version"] == 1
    burst = b""  # written at once, as a fast typist's editor sends them (no gap the debounce could end in)
    for v in range(2, 22):
        body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": v},
            "contentChanges": [{"text": leak + f"// edit {v}\n" if v < 21 else NCOLS_96}]}}).encode()
        burst += b"Content-Length: %d\r\n\r\n" % len(body) + body
    editor.proc.stdin.write(burst)
    editor.proc.stdin.flush()
    got = editor.diagnostics(uri)
    assert (got["version"], [d["code"] for d in got["diagnostics"]]) == (21, ["TM102", "TM102"])
    editor.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    assert [m for m in editor.inbox.queue if m.get("method") == "textDocument/publishDiagnostics"] == []


def test_plan_command_and_hover_on_an_example(editor, tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "examples" / "gemm_blockscaled_good.ptx").read_text()
    init = editor.start(tmp_path)
    assert init["capabilities"]["executeCommandProvider"]["commands"] == ["tmemlint.plan"]
    uri = (tmp_path / "g.ptx").as_uri()
    editor.open(uri, text)
    assert editor.diagnostics(uri)["diagnostics"] == []
    got = editor.request("workspace/executeCommand", {"command": "tmemlint.plan",
                                                      "arguments": [uri, {"line": 600, "character": 0}]})["result"]
    assert got["kernel"] == "_Z22mxfp8_gemm_bf16_kernel14CUtensorMap_stS_PKjS1_P13__nv_bfloat16jjjf"
    assert [r["name"] for r in got["plan"]["kernels"][0]["regions"]] == ["acc0", "acc1", "SFA0", "SFB0"]
    assert "acc0" in got["text"]
    first = editor.request("workspace/executeCommand", {"command": "tmemlint.plan", "arguments": [uri]})["result"]
    assert (first["kernel"], first["text"]) == (got["kernel"], got["text"])  # no position: the first kernel
    cu_uri = (tmp_path / "g.cu").as_uri()  # a CUDA source is planned in source mode, as by `tmemlint plan`
    editor.open(cu_uri, (Path(__file__).resolve().parents[1] / "examples" / "gemm_leak_bad.cu").read_text(),
                language="cuda")
    cu = editor.request("workspace/executeCommand", {"command": "tmemlint.plan", "arguments": [cu_uri]})["result"]
    assert cu["kernel"] and [f["code"] for f in cu["plan"]["kernels"][0]["findings"]].count("TM101") == 1
    txt = editor.request("workspace/executeCommand", {"command": "tmemlint.plan",
                                                      "arguments": [(tmp_path / "g.txt").as_uri()]})["result"]
    assert txt == {"kernel": None, "plan": None, "text": "g.txt: not a PTX file or a CUDA source"}
    hov = editor.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": {"line": 691, "character": 3}})["result"]
    assert hov["contents"]["value"] == (
        "**tcgen05.ld.sync.aligned.32x32b.x8.b32**\n\nexecuted by warps 4-7\n\n"
        "| | region | kind | lanes | columns | packing | operand |\n|---|---|---|---|---|---|---|\n"
        "| reads | `acc0` | accumulator | [0, 128) | [0, 128) | f32 accumulator | ld |\n"
        "| reads | `acc1` | accumulator | [0, 128) | [128, 256) | f32 accumulator | ld |")
    hov = editor.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": {"line": 178, "character": 3}})["result"]
    assert hov["contents"]["value"].endswith(
        "regions cover 264 of 512 allocated columns (48.4% waste); 1 CTA(s) per SM use 512 of 512 columns: fits")
    assert editor.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 20, "character": 0}})["result"] is None
