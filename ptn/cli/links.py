"""Where the docs site lives, and the address of each rule's section in its rendered spec.

One base URL for every rule link ptn prints or ships: the CLI's text report, and (read from
mkdocs.yml's ``site_url``, which must equal ``DOCS_URL``) the inspector page's build. The
rendered spec gives each rule heading ``#### `rule` (severity)`` the anchor
``rule-severity`` (tools/docs_hooks.py; tests/test_docs_site.py checks every one).
``PTN_DOCS_URL`` points the CLI at another copy of the site (a mirror, ``mkdocs serve``).
"""

from __future__ import annotations

import os

from ptn_generated.rule_ids import SEVERITY

DOCS_URL = "https://ptn-tools.readthedocs.io/en/latest/"
"""The published docs site (mkdocs.yml ``site_url``), with its trailing slash."""


def docs_url() -> str:
    """``$PTN_DOCS_URL`` when set (a trailing slash added), else ``DOCS_URL``."""
    base = os.environ.get("PTN_DOCS_URL") or DOCS_URL
    return base if base.endswith("/") else base + "/"


def rule_url(rule: str) -> str:
    """The rendered spec's section for ``rule``: ``<docs>/spec/#<rule>-<severity>``, with the
    severity its heading gives (not the one ``--strict`` reports)."""
    return f"{docs_url()}spec/#{rule}-{SEVERITY[rule]}"
