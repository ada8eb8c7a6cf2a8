"""``tmemlint server``: a Language Server Protocol server over standard input/output (pygls).

Diagnostics are published for ``.ptx`` documents, and for ``.cu``/``.cuh`` documents when the engine has a
source-mode linter (``tmemlint.engine.source_linter()``), on open, change and save; closing a document clears
them.  Each diagnostic carries the rule code, ``codeDescription.href`` (the rule page), ``source`` "tmemlint",
the severity (error → Error, warning → Warning, info → Information) and ``relatedInformation`` for the related
places.  Settings come from the configuration file nearest to the document (``tmemlint.config``); a broken
configuration is shown to the user once (``window/showMessage``) and the defaults are used; saving a
``pyproject.toml`` or ``tmemlint.toml`` in the editor reloads the configuration and lints the open documents again.

Needs the ``server`` extra: ``pip install 'tmemlint[server]'`` (pygls and lsprotocol).
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from tmemlint import __version__
from tmemlint.config import CONFIG_NAMES, ConfigError, Settings, clear_cache
from tmemlint.docs import rule_url
from tmemlint.engine import PTX_SUFFIXES, SOURCE_SUFFIXES, Options, lint_document, source_linter
from tmemlint.findings import Finding, Severity
from tmemlint.names import demangle_message

SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error, Severity.WARNING: lsp.DiagnosticSeverity.Warning,
            Severity.INFO: lsp.DiagnosticSeverity.Information}


def uri_to_path(uri: str) -> str:
    """The file-system path of a ``file:`` URI (other schemes: the URI's path part, unquoted)."""
    p = urlparse(uri)
    path = unquote(p.path)
    if os.name == "nt" and len(path) > 2 and path[0] == "/" and path[2] == ":":  # pragma: no cover
        path = path[1:]
    return path


def wants(path: str) -> bool:
    """Whether the server lints a document at ``path``: PTX always, CUDA only with a source-mode linter."""
    if path.endswith(PTX_SUFFIXES):
        return True
    return path.endswith(SOURCE_SUFFIXES) and source_linter() is not None


def _range(line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
    start = lsp.Position(line=max(line - 1, 0), character=max(column - 1, 0))
    end = lsp.Position(line=max(end_line - 1, 0), character=max(end_column - 1, 0))
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return lsp.Range(start=start, end=end)


def to_diagnostic(f: Finding, uri: str, path: str) -> lsp.Diagnostic:
    """The LSP diagnostic of finding ``f`` of the document ``uri`` (file ``path``).  LSP positions are 0-based;
    a related place in another file gets that file's ``file:`` URI."""
    related = []
    for r in f.related:
        r_uri = uri if r.path == path else _path_uri(r.path)
        related.append(lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=r_uri, range=_range(r.line, r.column, r.line, r.column + 1)),
            message=r.message))
    return lsp.Diagnostic(
        range=_range(f.line, f.column, f.end_line, f.end_column),
        message=f"{demangle_message(f.message)} ({f.name})",
        severity=SEVERITY[f.severity],
        code=f.code,
        code_description=lsp.CodeDescription(href=rule_url(f.code)),
        source="tmemlint",
        related_information=related or None,
    )


def _path_uri(path: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


class TmemlintServer(LanguageServer):
    """The language server: lints whole documents (full text sync) and publishes their diagnostics."""

    def __init__(self) -> None:
        super().__init__("tmemlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.settings = Settings()
        self.reported_errors: set[str] = set()

    def options_for(self, path: str) -> Options:
        """The options of ``path`` from its nearest configuration; the defaults (and one message to the user)
        when that configuration is broken."""
        try:
            return self.settings.options_for(path)
        except ConfigError as e:
            if str(e) not in self.reported_errors:
                self.reported_errors.add(str(e))
                self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error,
                                                               message=f"tmemlint: {e}"))
            return Options()

    def reload_settings(self) -> None:
        """Forget every configuration read so far (a configuration file was saved) and lint the open documents
        again."""
        clear_cache()
        self.settings = Settings()
        self.reported_errors.clear()
        for uri in list(self.workspace.text_documents):
            self.lint(uri)

    def lint(self, uri: str) -> None:
        """Lint the open document ``uri`` and publish its diagnostics (nothing for documents it does not lint)."""
        doc = self.workspace.get_text_document(uri)
        path = uri_to_path(uri)
        if not wants(path):
            return
        try:
            findings = lint_document(doc.source, path, self.options_for(path))
        except Exception as e:  # noqa: BLE001 - a bug must not take the editor's server down
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error,
                                                         message=f"tmemlint: {path}: internal error: {e!r}"))
            findings = []
        diags = [to_diagnostic(f, uri, path) for f in findings if f.path == path]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=doc.version, diagnostics=diags))


def create_server() -> TmemlintServer:
    """A server with its handlers registered (didOpen, didChange, didSave lint; didClose clears)."""
    server = TmemlintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TmemlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        """Lint a document when the editor opens it."""
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TmemlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        """Lint the document's new full text."""
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TmemlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        """Lint a saved document; a saved configuration file reloads the settings."""
        if os.path.basename(uri_to_path(params.text_document.uri)) in CONFIG_NAMES:
            ls.reload_settings()
            return
        ls.lint(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TmemlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        """Clear the diagnostics of a closed document."""
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    return server


def main() -> None:
    """Serve LSP on standard input/output until the client sends ``exit``."""
    create_server().start_io()
