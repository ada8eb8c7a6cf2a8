"""Headless Chromium for the picture tests: render an HTML page, read back every SVG text's box from the DOM, and
take a screenshot, with no driver dependency (Chromium's own ``--dump-dom`` and ``--screenshot``).

``chromium()`` is the browser's path or None; ``SKIP_REASON`` says why a test skips without it.  ``render(page,
tmp)`` loads the page (a file) twice: once with a small script appended that writes each ``<text>``'s
``getBoundingClientRect()`` (CSS pixels) into the DOM, which ``--dump-dom`` prints; once for the PNG.  Chromium
writes the page's console messages (``console.error``, uncaught exceptions) to its log as ``CONSOLE`` lines:
``Rendered.console`` holds them.  Chromium is run offline: no network, no first-run, a fresh profile.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

#: Debian's package installs /usr/bin/chromium; other names are tried on PATH.
_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")

SKIP_REASON = ("no headless Chromium on this machine (apt-get install chromium; .ci/run installs it): the plan's "
               "picture is not rendered in a browser")

_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1", "--mute-audio")

#: Appended to the page: one record per SVG ``<text>`` (its svg's index, class, data-region, data-panel, its own
#: text, its tooltip, box in CSS pixels) and the page's height, as JSON in ``<pre id="tmemlint-boxes">``.
_PROBE = """<script>(function(){var svgs=Array.prototype.slice.call(document.querySelectorAll('svg'));var out=[];
svgs.forEach(function(s,i){s.querySelectorAll('text').forEach(function(t){var r=t.getBoundingClientRect();
out.push({svg:i,cls:t.getAttribute('class')||'',region:t.getAttribute('data-region')||'',
panel:t.getAttribute('data-panel')||'',box:[r.left,r.top,r.right,r.bottom],
text:Array.prototype.filter.call(t.childNodes,function(n){return n.nodeType===3;}).map(function(n){
return n.nodeValue;}).join(''),title:(t.querySelector('title')||{textContent:''}).textContent});});});
var p=document.createElement('pre');p.id='tmemlint-boxes';
p.textContent=JSON.stringify({texts:out,height:document.documentElement.scrollHeight,svgs:svgs.length});
document.body.appendChild(p);})();</script>"""


def chromium() -> str | None:
    """The Chromium executable, or None when this machine has none."""
    for c in _CANDIDATES:
        path = c if os.path.isabs(c) and os.access(c, os.X_OK) else shutil.which(c)
        if path:
            return path
    return None


@dataclass(frozen=True)
class TextBox:
    """One SVG ``<text>`` as the browser laid it out: ``box`` is (left, top, right, bottom) in CSS pixels."""

    svg: int
    cls: str
    region: str
    panel: str
    text: str
    title: str
    box: tuple[float, float, float, float]

    def overlaps(self, other: "TextBox", slack: float = 0.5) -> bool:
        """The two boxes share an area more than ``slack`` pixels deep both ways (touching is not overlapping)."""
        a, b = self.box, other.box
        return (min(a[2], b[2]) - max(a[0], b[0]) > slack) and (min(a[3], b[3]) - max(a[1], b[1]) > slack)


@dataclass(frozen=True)
class Png:
    """A PNG's header and its image rows as stored (each filtered scanline, filter byte first)."""

    width: int
    height: int
    rows: tuple[bytes, ...]

    def distinct_rows(self) -> int:
        """Distinct filtered scanlines: a blank (one-colour) image has at most three (first row, Up-filtered
        zeros, a differently filtered blank row); a drawn one about as many as rows with ink."""
        return len(set(self.rows))


@dataclass(frozen=True)
class Rendered:
    """One page in the browser: its text boxes, the page height (CSS px), its console messages, the screenshot."""

    texts: tuple[TextBox, ...]
    height: int
    svgs: int
    console: tuple[str, ...]
    png: Png
    png_bytes: int

    def overlapping_pairs(self, skip_cls: tuple[str, ...] = ("mark",)) -> list[tuple[TextBox, TextBox]]:
        """Pairs of texts of one SVG whose boxes overlap (texts of a class in ``skip_cls`` left out: the event
        glyphs drawn on a band on purpose)."""
        ts = [t for t in self.texts if not any(c in t.cls.split() for c in skip_cls) and t.text.strip()]
        out = []
        for i, a in enumerate(ts):
            for b in ts[i + 1:]:
                if a.svg == b.svg and a.overlaps(b):
                    out.append((a, b))
        return out


def read_png(data: bytes) -> Png:
    """Header and filtered scanlines of an 8-bit non-interlaced PNG (what Chromium writes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height, bpp = 8, b"", 0, 0, 4
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            bpp = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour, 4) * max(1, depth // 8)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = 1 + width * bpp
    return Png(width, height, tuple(raw[i:i + stride] for i in range(0, len(raw), stride)))


def _run(browser: str, args: list[str], profile: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([browser, *_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def render(page: Path, tmp: Path, width: int = 1100, height: int = 1040, timeout: float = 90) -> Rendered:
    """Load ``page`` (an HTML file) in headless Chromium: its text boxes and console (``--dump-dom`` of the page
    with ``_PROBE`` appended) and a ``width`` x ``height`` screenshot of its top (``--screenshot``)."""
    browser = chromium()
    if browser is None:
        raise RuntimeError(SKIP_REASON)
    probe = tmp / (page.stem + ".probe.html")
    text = page.read_text(encoding="utf-8")
    at = text.rfind("</body>")
    probe.write_text(text[:at] + _PROBE + text[at:] if at >= 0 else text + _PROBE, encoding="utf-8")
    dom = _run(browser, ["--enable-logging=stderr", "--v=0", "--dump-dom", probe.as_uri()], tmp / "profile-dom",
               timeout)
    m = re.search(r'<pre id="tmemlint-boxes">(.*?)</pre>', dom.stdout, re.S)
    if m is None:
        raise RuntimeError(f"the browser printed no boxes (exit {dom.returncode}): {dom.stderr[-2000:]}")
    data = json.loads(html.unescape(m.group(1)))
    console = tuple(line for line in dom.stderr.splitlines() if ":CONSOLE" in line)
    png_path = tmp / (page.stem + ".png")
    shot = _run(browser, [f"--screenshot={png_path}", f"--window-size={width},{height}", page.as_uri()],
                tmp / "profile-shot", timeout)
    if not png_path.is_file():
        raise RuntimeError(f"the browser wrote no screenshot (exit {shot.returncode}): {shot.stderr[-2000:]}")
    png_data = png_path.read_bytes()
    texts = tuple(TextBox(t["svg"], t["cls"], t["region"], t["panel"], t["text"], t["title"],
                          (float(t["box"][0]), float(t["box"][1]), float(t["box"][2]), float(t["box"][3])))
                  for t in data["texts"])
    return Rendered(texts, int(data["height"]), int(data["svgs"]), console, read_png(png_data), len(png_data))
