"""The LSP glue: ``TmemlintServer`` (pygls) and its handlers.

Documents: ``.ptx``; ``.cu``/``.cuh`` and the C++ headers ``.h``/``.hpp``/``.hh``/``.hxx`` when the engine has a
source-mode linter.  Open, change and save lint the document off the message loop (``scheduler``: the newest text
only, after a short debounce, superseded work cancelled, ``$/progress`` for slow lints; in a large PTX document
only the kernels an edit changed are analysed again, ``incremental``); closing clears its diagnostics.  Each diagnostic carries the rule code, ``codeDescription.href``, ``source`` "tmemlint", the severity,
``relatedInformation`` and, for TM902, the ``Unnecessary`` tag; every range is in the negotiated
``positionEncoding`` (``positions``).

Settings: the configuration file nearest to each document (``tmemlint.config``), with the editor's settings on top
(``settings``: ``initializationOptions`` and the ``tmemlint`` section of ``workspace/configuration``).  The server
watches ``**/pyproject.toml`` and ``**/tmemlint.toml`` (``workspace/didChangeWatchedFiles``, registered dynamically
when the client allows it); a change, a save of such a file or ``workspace/didChangeConfiguration`` reloads the
settings and lints the open documents again.  A broken configuration is shown once (``window/showMessage``) and the
defaults are used.

Also: hover on a tcgen05 instruction of a PTX document (``hover``), quick fixes that insert or remove suppression
comments (``actions``), and the command ``tmemlint.plan`` (arguments: the document URI and optionally an LSP
position or a 0-based line) returning ``{"kernel", "text", "plan"}``: the plan of the kernel under the cursor.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from tmemlint.version import __version__
from tmemlint.config import CONFIG_NAMES, ConfigError, Settings, clear_cache
from tmemlint.docs import rule_url
from tmemlint import pipeline
from tmemlint.checks.registry import codes_tagged
from tmemlint.engine import Options, lint_document
from tmemlint.findings import Finding, Severity
from tmemlint.names import demangle_message
from tmemlint.server.incremental import lint_incremental
from tmemlint.server.positions import UTF16, Lines
from tmemlint.server.scheduler import DEBOUNCE_S, Job, Scheduler
from tmemlint.server.settings import ClientSettings, normalize, parse_client_settings

SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error, Severity.WARNING: lsp.DiagnosticSeverity.Warning,
            Severity.INFO: lsp.DiagnosticSeverity.Information}
#: Configuration files the server watches (``workspace/didChangeWatchedFiles``).
WATCHED = tuple(f"**/{name}" for name in CONFIG_NAMES)
PLAN_COMMAND = "tmemlint.plan"
#: How long documents opened right after start-up wait for the editor's answer to ``workspace/configuration``.
SETTINGS_WAIT_S = 1.0


def uri_to_path(uri: str) -> str:
    """The file-system path of a ``file:`` URI (other schemes: the URI's path part, unquoted)."""
    p = urlparse(uri)
    path = unquote(p.path)
    if os.name == "nt" and len(path) > 2 and path[0] == "/" and path[2] == ":":  # pragma: no cover
        path = path[1:]
    return path


def _path_uri(path: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


def wants(path: str) -> bool:
    """Whether the server lints a document at ``path``: PTX, CUDA sources and C++ headers (``pipeline.language``
    decides how)."""
    return path.endswith(pipeline.PTX_SUFFIXES) or pipeline.is_source(path)


def _is_ptx(path: str) -> bool:
    return path.endswith(pipeline.PTX_SUFFIXES)


def to_diagnostic(f: Finding, uri: str, path: str, lines: Lines, other: dict[str, Lines] | None = None
                  ) -> lsp.Diagnostic:
    """The LSP diagnostic of finding ``f`` of the document ``uri`` (file ``path``, text ``lines``); related
    places in other files use ``other[path]`` (their text, for the encoding) and get their ``file:`` URI."""
    related = []
    for r in f.related:
        same = r.path == path
        rl = lines if same else (other or {}).get(r.path) or Lines("", lines.encoding)
        related.append(lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uri if same else _path_uri(r.path),
                                  range=rl.range(r.line, r.column, r.line, r.column + 1)),
            message=r.message))
    return lsp.Diagnostic(
        range=lines.range(f.line, f.column, f.end_line, f.end_column),
        message=f"{demangle_message(f.message)} ({f.name})",
        severity=SEVERITY[f.severity],
        code=f.code,
        code_description=lsp.CodeDescription(href=rule_url(f.code)),
        source="tmemlint",
        related_information=related or None,
        tags=[lsp.DiagnosticTag.Unnecessary] if f.code in codes_tagged("unnecessary") else None,
    )


class TmemlintServer(LanguageServer):
    """The language server: lints whole documents (full text sync) and publishes their diagnostics."""

    def __init__(self) -> None:
        super().__init__("tmemlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.settings = Settings()
        self.client_settings = ClientSettings()
        self.reported_errors: set[str] = set()
        self.scheduler = Scheduler(self._publish, self._failed, self._progress)
        self.init_options: Any = None
        #: the editor's settings from initializationOptions and from workspace/configuration (raw objects)
        self._layers: dict[str, Any] = {}
        #: documents opened while the editor's settings are being asked for (linted when they arrive)
        self.waiting: set[str] | None = None
        self._root: str | None = None
        #: per document, the findings of its kernels by part key (``incremental``), from its last lint
        self.parts: dict[str, dict] = {}

    # ---- settings ------------------------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        """The negotiated position encoding (``utf-16`` before initialization)."""
        try:
            return str(self.workspace.position_encoding or UTF16)
        except RuntimeError:
            return UTF16

    def _tell(self, message: str) -> None:
        """Show an error to the user once per distinct message."""
        if message not in self.reported_errors:
            self.reported_errors.add(message)
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"tmemlint: {message}"))

    def set_client_settings(self, value: Any, layer: str = "init") -> None:
        """Use the editor's settings ``value`` from ``layer`` (``init``: initializationOptions; ``pulled``:
        workspace/configuration, whose keys win); broken ones are shown and ignored."""
        self._layers[layer] = normalize(value)
        merged: dict = {}
        for name in ("init", "pulled"):
            v = self._layers.get(name)
            if isinstance(v, dict):
                merged.update(v)
            elif v is not None:
                merged = v  # not an object: parse_client_settings says so
                break
        try:
            self.client_settings = parse_client_settings(merged or None, self._root)
        except ConfigError as e:
            self._tell(str(e))
            self.client_settings = ClientSettings()

    def options_for(self, path: str) -> Options:
        """The options of ``path``: its nearest configuration (the defaults, and one message to the user, when
        that configuration is broken) with the editor's settings on top."""
        try:
            opts = self.settings.options_for(path)
        except ConfigError as e:
            self._tell(str(e))
            opts = Options()
        return self.client_settings.apply(opts)

    def reload_settings(self) -> None:
        """Forget every configuration read so far (a configuration file changed) and lint the open documents
        again."""
        clear_cache()
        self.settings = Settings()
        self.reported_errors.clear()
        self.lint_all(0.0)

    def lint_all(self, delay: float = 0.0) -> None:
        for uri in list(self.workspace.text_documents):
            self.lint(uri, delay)

    # ---- linting -------------------------------------------------------------------------------------------
    def lint(self, uri: str, delay: float = DEBOUNCE_S) -> None:
        """Lint the open document ``uri`` after ``delay`` seconds, off the message loop, and publish its
        diagnostics (nothing for documents it does not lint).  A newer call for the same document supersedes
        this one."""
        path = uri_to_path(uri)
        if not wants(path):
            return
        if self.waiting is not None:
            self.waiting.add(uri)
            return
        doc = self.workspace.get_text_document(uri)
        text, version = doc.source, doc.version
        options = self.options_for(path)
        known = self.parts.get(uri, {})

        def work() -> tuple[list[Finding], dict]:
            return lint_incremental(text, path, options, known)

        self.scheduler.submit(uri, text.count("\n") + 1, work, delay, meta=(text, version, path))

    def _text_of(self, path: str) -> str:
        """The text of a related file: the open document's, else the file's (empty when unreadable)."""
        uri = _path_uri(path)
        if uri in self.workspace.text_documents:
            return self.workspace.get_text_document(uri).source
        try:
            with open(path, "rb") as fh:
                return fh.read(64 * 1024 * 1024).decode("utf-8", "replace")
        except OSError:
            return ""

    def _publish(self, job: Job, result: tuple[list[Finding], dict]) -> None:
        findings, self.parts[job.uri] = result
        text, version, path = job.meta
        lines = Lines(text, self.encoding)
        other: dict[str, Lines] = {}
        for f in findings:
            for r in f.related:
                if r.path != path and r.path not in other:
                    other[r.path] = Lines(self._text_of(r.path), self.encoding)
        diags = [to_diagnostic(f, job.uri, path, lines, other) for f in findings if f.path == path]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=job.uri, version=version, diagnostics=diags))

    def _failed(self, job: Job, error: BaseException) -> None:
        _, version, path = job.meta
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error,
                                                     message=f"tmemlint: {path}: internal error: {error!r}"))
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=job.uri, version=version,
                                                                            diagnostics=[]))

    def _progress(self, uri: str):
        """Start a work-done progress for a slow lint of ``uri`` (when the client supports it); returns the
        callable that ends it.  Never waits for the client."""
        caps = self.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return lambda: None
        token = f"tmemlint-{uuid.uuid4().hex}"
        state = {"begun": False, "ended": False}
        name = os.path.basename(uri_to_path(uri))

        async def go() -> None:
            try:
                await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
            except Exception:  # noqa: BLE001 - no progress then
                return
            self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title="tmemlint",
                                                                           message=f"checking {name}"))
            state["begun"] = True
            if state["ended"]:
                self.work_done_progress.end(token, lsp.WorkDoneProgressEnd())

        asyncio.get_running_loop().create_task(go())

        def end() -> None:
            state["ended"] = True
            if state["begun"]:
                self.work_done_progress.end(token, lsp.WorkDoneProgressEnd())

        return end

    # ---- requests --------------------------------------------------------------------------------------------
    def document_lines(self, uri: str) -> tuple[str, Lines]:
        text = self.workspace.get_text_document(uri).source
        return text, Lines(text, self.encoding)

    async def off_loop(self, fn, *args):
        """Run ``fn(*args)`` in the scheduler's workers (a request that parses or analyses)."""
        return await asyncio.get_running_loop().run_in_executor(self.scheduler.executor, fn, *args)


def _plan_of(text: str, path: str, line: int | None, options: Options) -> dict:
    """The ``tmemlint.plan`` command's result for 1-based ``line`` of a PTX text or CUDA source (None: its first
    kernel), with the document's options (the findings ``check`` gives it), as ``tmemlint plan`` makes it."""
    from tmemlint.plan.model import PlanError, plan_unit
    from tmemlint.plan.render_text import render_text
    from tmemlint.server.hover import kernel_at

    try:
        model = plan_unit(pipeline.load(text, options, name=path, whole=True), ctas_per_sm=options.ctas_per_sm)
    except PlanError as e:
        return {"kernel": None, "text": str(e), "plan": None}
    k = kernel_at(model, line) if line is not None else (model["kernels"] or [None])[0]
    if k is None:
        return {"kernel": None, "text": "no kernel that uses Tensor Memory here", "plan": None}
    one = {**model, "kernels": [k]}
    return {"kernel": k["kernel"], "text": render_text(one), "plan": one}


def create_server() -> TmemlintServer:
    """A server with its handlers registered."""
    server = TmemlintServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TmemlintServer, params: lsp.InitializeParams) -> None:
        """Keep the initialization options and the workspace root (for relative include folders)."""
        root = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
        ls._root = uri_to_path(root) if root else params.root_path
        ls.init_options = params.initialization_options

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: TmemlintServer, params: lsp.InitializedParams) -> None:
        """Apply the initialization options, watch the configuration files and ask for the editor's settings;
        warm the linter up in a worker (imports, parser tables) so that forked lints start warm."""
        ls.scheduler.warm_up(warm_up)
        ls.set_client_settings(ls.init_options)
        caps = ls.client_capabilities.workspace if ls.client_capabilities else None
        watch = caps.did_change_watched_files if caps else None
        if watch is not None and watch.dynamic_registration:
            opts = lsp.DidChangeWatchedFilesRegistrationOptions(
                watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in WATCHED])
            ls.client_register_capability(lsp.RegistrationParams(registrations=[lsp.Registration(
                id="tmemlint-config-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=opts)]))
        if caps is not None and caps.configuration:
            pull_configuration(ls, first=True)

    def pull_configuration(ls: TmemlintServer, first: bool = False) -> None:
        """Ask for the ``tmemlint`` section of the editor's settings; the first time, documents opened before
        the answer (or before ``SETTINGS_WAIT_S``) are linted once it is there."""
        def got(result, *_):
            if isinstance(result, (list, tuple)) and result:
                ls.set_client_settings(result[0], "pulled")
            if ls.waiting is None:  # a later pull, or the answer came after SETTINGS_WAIT_S: lint all again
                ls.lint_all(0.0)
            else:
                release()

        def release():
            held, ls.waiting = ls.waiting, None
            for uri in held or ():
                if uri in ls.workspace.text_documents:
                    ls.lint(uri, 0.0)

        if first:
            ls.waiting = set()
            try:
                asyncio.get_running_loop().call_later(SETTINGS_WAIT_S, release)
            except RuntimeError:
                ls.waiting = None
        ls.workspace_configuration(lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="tmemlint")]),
                                   callback=got)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: TmemlintServer, params: lsp.DidChangeConfigurationParams) -> None:
        """The editor's settings changed: pull them (or take the pushed ``settings``) and lint again."""
        caps = ls.client_capabilities.workspace if ls.client_capabilities else None
        if caps is not None and caps.configuration:
            pull_configuration(ls)
        elif params.settings is not None:
            ls.set_client_settings(params.settings, "pulled")
            ls.lint_all(0.0)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TmemlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        """A configuration file was created, changed or deleted: reload the settings and lint again."""
        if any(os.path.basename(uri_to_path(c.uri)) in CONFIG_NAMES for c in params.changes):
            ls.reload_settings()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TmemlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        """Lint a document when the editor opens it."""
        ls.lint(params.text_document.uri, 0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TmemlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        """Lint the document's new full text after the debounce."""
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TmemlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        """Lint a saved document; a saved configuration file reloads the settings."""
        if os.path.basename(uri_to_path(params.text_document.uri)) in CONFIG_NAMES:
            ls.reload_settings()
            return
        ls.lint(params.text_document.uri, 0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TmemlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        """Forget a closed document's pending lint and clear its diagnostics."""
        ls.scheduler.cancel(params.text_document.uri)
        ls.parts.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TmemlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        """The TMEM region, warp class and (on an alloc) column budget of a tcgen05 instruction."""
        from tmemlint.server.hover import hover_markdown

        uri = params.text_document.uri
        path = uri_to_path(uri)
        if not _is_ptx(path):
            return None
        text, lines = ls.document_lines(uri)
        line, _ = lines.column(params.position)
        md = await ls.off_loop(hover_markdown, text, path, line, ls.options_for(path))
        if md is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=md),
                         range=lsp.Range(start=lsp.Position(line=line - 1, character=0),
                                         end=lines.end_of_line(line - 1)))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def code_action(ls: TmemlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        """Quick fixes for tmemlint's diagnostics in the range: suppress a finding, remove an unused
        suppression."""
        from tmemlint.server.actions import remove_unused_action, suppress_actions

        uri = params.text_document.uri
        if not wants(uri_to_path(uri)):
            return None
        text, lines = ls.document_lines(uri)
        out: list[lsp.CodeAction] = []
        for d in params.context.diagnostics:
            if d.source != "tmemlint" or not d.code:
                continue
            if d.code == "TM902":
                a = remove_unused_action(uri, text, lines, d)
                if a is not None:
                    out.append(a)
            else:
                out.extend(suppress_actions(uri, text, lines, d))
        return out or None

    @server.command(PLAN_COMMAND)
    async def plan_command(ls: TmemlintServer, *args: Any) -> dict:
        """``tmemlint.plan(uri[, position | line])``: the plan of the kernel under the cursor (the first
        kernel without a position): ``{"kernel", "text", "plan"}`` (``kernel`` None and ``text`` saying why when
        there is none)."""
        if not args or not isinstance(args[0], str):
            return {"kernel": None, "text": "tmemlint.plan: expected the document URI as the first argument",
                    "plan": None}
        uri = args[0]
        path = uri_to_path(uri)
        if not wants(path):
            return {"kernel": None, "plan": None,
                    "text": f"{os.path.basename(path)}: not a PTX file or a CUDA source"}
        text, lines = ls.document_lines(uri)
        opts = ls.options_for(path)
        pos = args[1] if len(args) > 1 else None
        line = None
        if isinstance(pos, dict) and "line" in pos:
            line, _ = lines.column(lsp.Position(line=int(pos["line"]), character=int(pos.get("character", 0))))
        elif isinstance(pos, int):
            line = pos + 1
        return await ls.off_loop(_plan_of, text, path, line, opts)

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: TmemlintServer, *args) -> None:
        ls.scheduler.shutdown()

    return server


#: A kernel that makes the engine import every analysis and build the parser (``warm_up``).
_WARM_PTX = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry warm()
{
\t.reg .b32 %r<4>;
\t.shared .align 4 .b32 slot;
\tmov.u32 %r1, slot;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;
\tld.shared.u32 %r2, [%r1];
\ttcgen05.ld.sync.aligned.32x32b.x1.b32 {%r3}, [%r2];
\ttcgen05.wait::ld.sync.aligned;
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 32;
\tret;
}
"""
_WARM_CU = ('__global__ void warm(unsigned* s) { asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.'
            'shared::cta.b32 [%0], 32;" :: "r"(s[0])); }\n')


def warm_up() -> None:
    """Lint two tiny documents so that the modules the engine imports lazily are loaded and the parser is built
    in this process (a forked lint inherits them instead of paying ~0.4 s for them)."""
    lint_document(_WARM_PTX, "warm.ptx")
    lint_document(_WARM_CU, "warm.cu")


def main() -> None:
    """Serve LSP on standard input/output until the client sends ``exit``."""
    create_server().start_io()
