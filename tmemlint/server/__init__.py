"""``tmemlint server``: a Language Server Protocol server over standard input/output (pygls).

``protocol`` holds the server and its handlers; ``positions`` the conversion of finding columns to the negotiated
position encoding; ``scheduler`` when documents are linted (off the message loop, newest text only); ``settings``
the editor's own settings; ``hover`` and ``actions`` the hover text and the suppression quick fixes.

Needs the ``server`` extra: ``pip install 'tmemlint[server]'`` (pygls and lsprotocol).
"""

from tmemlint.server.protocol import TmemlintServer, create_server, main, to_diagnostic, uri_to_path, wants

__all__ = ["TmemlintServer", "create_server", "main", "to_diagnostic", "uri_to_path", "wants"]
