"""An html.parser check that a page references no other host (shared by the report tests)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from reports.render import environment

_URL_ATTRS = {"src", "href", "xlink:href", "action", "formaction", "poster", "data", "srcset",
              "background", "manifest", "ping"}
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)|@import", re.IGNORECASE)


def is_external(url: str) -> bool:
    """True for anything the browser would fetch from elsewhere (not a fragment or data: URL)."""
    url = url.strip()
    return not (url == "" or url.startswith("#") or url.startswith("data:"))


class OfflineChecker(HTMLParser):
    """Collects every external reference and every tag that pulls in another file."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.tags: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        for name, value in attrs:
            if name in _URL_ATTRS and value is not None and is_external(value):
                self.problems.append(f"<{tag} {name}={value!r}>")
            if name == "style" and value and _CSS_URL.search(value):
                self.problems.append(f"<{tag} style={value!r}>")
        if tag == "link":
            self.problems.append(f"<link {values}>")
        if tag == "script" and "src" in values:
            self.problems.append(f"<script src={values['src']!r}>")
        if tag in {"iframe", "embed", "object", "img"}:
            self.problems.append(f"<{tag}> embeds another resource")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            for match in _CSS_URL.finditer(data):
                self.problems.append(f"css {match.group(0)!r}")


def external_references(document: str) -> list[str]:
    """Every reference in ``document`` that would make the browser contact another host."""
    checker = OfflineChecker()
    checker.feed(document)
    checker.close()
    return checker.problems


def blank_page() -> str:
    """The reports' page template with one paragraph: the control for the offline checks."""
    return environment().from_string(
        '{% extends "base.html.j2" %}{% block title %}t{% endblock %}'
        "{% block body %}<p>x</p>{% endblock %}").render()
