"""Building a doctor's report: the three levels, and the last line of defence
against leaking a secret.

Checks quote what they met (a provider's error, a config loader's message),
and such text can in principle echo a credential. `finish` therefore blanks
every API key, custom header value and URL password the configuration
resolves to, in every detail and fix, whatever produced it; a check need not
remember to.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence

from omem_protocol import DoctorCheck, DoctorResult
from openmemoryd.config import Config
from openmemoryd.embed.remote import REMOTE_PROVIDERS, api_key_for, remote_settings
from openmemoryd.embed.remote.http import Redactor


def ok(name: str, detail: str) -> DoctorCheck:
    return DoctorCheck(name=name, status="ok", detail=detail)


def warn(name: str, detail: str, fix: str | None = None) -> DoctorCheck:
    """Worth a look, but nothing is broken (the exit code stays 0)."""
    return DoctorCheck(name=name, status="warn", detail=detail, fix=fix)


def fail(name: str, detail: str, fix: str) -> DoctorCheck:
    """Broken: a failure always says how to repair it."""
    return DoctorCheck(name=name, status="fail", detail=detail, fix=fix)


def secrets_of(config: Config, environ: Mapping[str, str]) -> list[str]:
    """Every credential the embedding and rerank configurations resolve to."""
    import httpx  # here, not at the top: `doctor` is imported by every daemon start

    rerank = config.search.rerank
    found: list[str] = [rerank.api_key]
    if rerank.api_key_env:
        found.append(environ.get(rerank.api_key_env, ""))
    for name in REMOTE_PROVIDERS:
        key = api_key_for(name, config.embedding, environ)
        if key:
            found.append(key)
        remote = remote_settings(name, config.embedding)
        found.extend(remote.headers.values())
        with contextlib.suppress(httpx.InvalidURL):
            found.append(httpx.URL(remote.base_url).password or "")
    return found


def finish(checks: Sequence[DoctorCheck], started: float, secrets: Iterable[str]) -> DoctorResult:
    """The result of *checks*, with every secret blanked out."""
    # Very short values (a header like "X-Team: 1") are not secrets worth
    # mangling every digit of the report for.
    redact = Redactor(s for s in secrets if len(s) >= 4)
    clean = tuple(
        DoctorCheck(
            name=check.name,
            status=check.status,
            detail=redact(check.detail),
            fix=redact(check.fix) if check.fix is not None else None,
        )
        for check in checks
    )
    return DoctorResult(
        checks=clean,
        ok=all(check.status != "fail" for check in clean),
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def size(count: int) -> str:
    """Bytes for people: 1.2 MB."""
    if count < 1000:
        return f"{count} B"
    amount = count / 1000
    for unit in ("kB", "MB"):
        if amount < 1000:
            return f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{amount:.1f} GB"
