"""Deterministic synthetic memory workspaces for search benchmarks.

A benchmark needs a workspace whose size in chunks is known in advance, whose
text looks like what agents really write (English, Chinese and both mixed in
one line, bullets, decisions, code), and in which some facts can be found by
exactly one keyword search. Everything is drawn from the word and phrase pools
below with one seeded ``random.Random``; there is no external data.

Layout: ``MEMORY.md``, ``USER.md`` and ``PROJECT.md`` (up to 5 sections each),
up to 6 topic files ``memory/projects/<name>.md`` (6-15 dated sections each),
and daily files ``memory/YYYY-MM-DD.md`` on consecutive days back from
`NEWEST_DAY`, each titled ``# YYYY-MM-DD`` with 3-12 ``## HH:MM <topic>``
sections in time order. Daily files hold everything the others do not.

Invariants:

* Same ``(sections, seed, needles)`` gives byte-identical files; no set or
  dict iteration order, clock or environment feeds the output.
* ``CorpusStats.sections`` equals the number of ``## `` heading lines written,
  which equals the ``sections`` argument.
* Every section (its ``## `` line up to the line before the next ``## `` line
  or the end of the file) costs between `SECTION_MIN_TOKENS` and
  `SECTION_MAX_TOKENS` per `estimate_tokens`. The daemon packs up to 200
  tokens a chunk (its default) and flushes before a heading once a chunk
  holds 50, so each section becomes about one chunk.
* The text before a file's first section (its ``#`` title) costs at most
  `PREAMBLE_MAX_TOKENS`, so title plus first section still fits one chunk.
* Only titles and section headings start with ``#``; code blocks never do, so
  no chunker can mistake a shell comment for a heading.
* Each needle's rare token (an invented Latin word, or two Han characters
  that no pool contains) occurs in exactly one file, on the needle's line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Final

from openmemoryd.text.tokens import estimate_tokens

__all__ = [
    "CHINESE_SECTION_SHARE",
    "NEWEST_DAY",
    "PREAMBLE_MAX_TOKENS",
    "SECTION_MAX_TOKENS",
    "SECTION_MIN_TOKENS",
    "CorpusStats",
    "Needle",
    "generate_workspace",
    "main",
    "sample_queries",
]

SECTION_MIN_TOKENS: Final = 75
SECTION_MAX_TOKENS: Final = 175
PREAMBLE_MAX_TOKENS: Final = 20
CHINESE_SECTION_SHARE: Final = 0.3
NEWEST_DAY: Final = date(2026, 11, 1)

# Sections are filled towards a random target and never past _HARD_MAX. Each
# piece (heading or block, with the blank line after it) is estimated alone;
# the sum of those estimates is never below the estimate of the joined text
# and at most one token per piece above it, so with pieces of >= ~10 tokens a
# section lands inside [SECTION_MIN_TOKENS, SECTION_MAX_TOKENS] without ever
# estimating the whole section.
_TARGET_LOW: Final = 100
_TARGET_HIGH: Final = 160
_HARD_MAX: Final = 170

_DAILY_MIN_SECTIONS: Final = 3
_DAILY_MAX_SECTIONS: Final = 12
_ROOT_MAX_SECTIONS: Final = 5
_TOPIC_MAX_FILES: Final = 6

# ---------------------------------------------------------------- pools

_EN_PEOPLE: Final = (
    "Alice", "Bob", "Priya", "Marco", "Sofia", "Kenji", "Fatima", "Lars", "Nadia", "Omar",
    "Tomas", "Yuki", "Grace", "Dmitri", "Ana", "Ravi", "Elena", "Jonas", "Mei", "Hannah",
    "Luis", "Ingrid", "Samir", "Chloe", "Viktor", "Amara", "Felix", "Rosa", "Theo", "Leila",
)  # fmt: skip
_CN_PEOPLE: Final = (
    "阿明", "小王", "李雷", "韩梅梅", "张伟", "王芳", "刘洋", "陈静", "老周", "小林",
    "赵磊", "孙丽", "黄涛", "吴敏", "郑凯", "何佳", "高远", "马超", "林晓", "宋雨",
)  # fmt: skip
_TOOLS: Final = (
    "Redis", "PostgreSQL", "SQLite", "Docker", "Kubernetes", "Terraform", "Grafana",
    "Prometheus", "nginx", "systemd", "GitHub Actions", "pytest", "ruff", "mypy", "FastAPI",
    "trio", "Celery", "Kafka", "S3", "Cloudflare", "Sentry", "tmux", "Homebrew", "uv",
    "Ansible", "MinIO", "ClickHouse", "Elasticsearch", "Caddy", "WireGuard", "Tailscale",
    "Obsidian", "Neovim", "VS Code", "Jupyter", "DuckDB", "pandas", "Airflow", "RabbitMQ",
    "Vault",
)  # fmt: skip
_PROJECTS: Final = (
    "atlas", "kestrel", "nebula", "orchard", "lighthouse", "quartz", "harbor", "ember",
    "juniper", "meridian", "falcon", "sequoia", "tundra", "cobalt", "willow",
)  # fmt: skip
_EN_TOPICS: Final = (
    "deploy pipeline", "cache invalidation", "search latency", "onboarding doc",
    "weekly sync", "billing migration", "on-call handoff", "API rate limits",
    "embedding model", "index rebuild", "backup rotation", "flaky tests", "release notes",
    "design review", "travel plans", "dentist appointment", "reading list",
    "quarterly planning", "login bug", "schema migration", "cost report", "load test",
    "access review", "log retention", "feature flags", "mobile release",
    "customer feedback", "hiring loop", "budget request", "incident review",
    "disk usage alert", "DNS cutover", "SSO rollout", "data export", "offsite agenda",
    "tax paperwork", "gym schedule", "apartment lease",
)  # fmt: skip
_CN_TOPICS: Final = (
    "缓存方案", "部署流程", "周会纪要", "搜索延迟", "数据迁移", "值班交接", "接口限流",
    "向量索引", "备份策略", "测试不稳定", "发布说明", "设计评审", "出差安排", "看牙预约",
    "读书清单", "预算审批", "性能优化", "用户反馈", "日志告警", "权限管理", "季度规划",
    "登录问题", "成本报表", "压力测试", "灰度发布", "客户回访", "招聘面试", "事故复盘",
    "磁盘告警", "域名切换", "单点登录", "数据导出", "团建安排", "报税材料", "健身计划",
    "租房合同", "代码审查", "监控大盘", "模型评测", "需求排期",
)  # fmt: skip
_EN_PREFS: Final = (
    "dark mode", "short answers", "detailed explanations", "morning meetings",
    "async updates", "Markdown tables", "plain text emails", "type hints everywhere",
    "small PRs", "squash merges", "rebasing", "metric units", "24-hour time",
    "British spelling", "oat milk", "window seats", "standing desks", "trains over flights",
)  # fmt: skip
_CN_PREFS: Final = (
    "简短的回答", "详细的解释", "上午开会", "异步沟通", "表格形式", "纯文本邮件", "小步提交",
    "中文回复", "靠窗的座位", "高铁出行", "无糖咖啡", "周报用要点", "先给结论", "安静的会议室",
)  # fmt: skip
_EN_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_CN_DAYS: Final = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
_MONTHS: Final = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
_EN_STATUS: Final = ("open", "blocked", "done", "in review", "waiting on vendor")
_CN_STATUS: Final = ("进行中", "已完成", "阻塞", "待评审", "等供应商")
_ROLES: Final = ("db", "api", "worker", "cache", "web", "batch")
_MODULES: Final = ("search", "index", "chunker", "embed", "watcher", "config", "store", "server")
_FUNCTIONS: Final = (
    "dedupe_hits", "load_config", "rotate_logs", "merge_scores", "parse_daily",
    "flush_queue", "retry_upload", "warm_cache",
)  # fmt: skip
_REGIONS: Final = ("eu-west-1", "us-east-2", "ap-southeast-1", "cn-north-1")

_EN_SENTENCES: Final = (
    "{p} asked to move the {t} meeting to {day}.",
    "Decided to keep {tool} for the {t}; revisit after {date}.",
    "{p} prefers {pref} over {pref2}.",
    "p95 for {t} went from {ms}ms to {ms2}ms after the {tool} change.",
    "Ticket #{ticket} tracks the {t} regression on {host}.",
    "Shipped {proj} {ver} with the {t} fix.",
    "{p} will own the {t} until the end of {monthname}.",
    "Budget for the {t} is capped at ${k}k this quarter.",
    "Paired with {p} on the {tool} config for {proj}.",
    "The {tool} dashboard shows a {pct}% error rate on {host}.",
    "Reminder: {t} sync with {p} every {day} at {time}.",
    "Rolled back {proj} to {ver} because {tool} timed out after {n}s.",
    "Note from {cp}: {ct} needs another pass before {day}.",
    "{p} and {cp} agreed the {t} can wait until {date}.",
    "The user wants short answers, no emoji, and shell commands in code blocks.",
    "Keep {tool} pinned to {ver}; newer builds broke the {t}.",
    "Disk on {host} reached {pct}%, so old logs and snapshots were rotated.",
    "Moved the {t} notes into memory/projects/{proj}.md.",
    "{p} is out for {n2} days from {date}; {p2} covers on-call.",
    "Use {tool} for local dev and {tool2} in CI.",
    "Asked the agent to summarise {t} threads every {day} morning.",
    "Meeting with {p} about the {t}: {n} open questions, {n2} resolved.",
    "{p} suggested trying {tool} for {ct}, but only behind a feature flag.",
    "Open question: does the {t} still need {tool} once {proj} {ver} is out?",
    "Follow-up for {p}: send the {t} numbers ({ms}ms median, {pct}% cache hits).",
)
_CN_SENTENCES: Final = (
    "{cp}说{ct}要在{cday}之前定下来。",
    "决定：{ct}先用 {tool}，{month}月再评估。",
    "{cp}更喜欢{cpref}，不太喜欢{cpref2}。",
    "部署 {tool} {ct} v{small}，{cp}已经确认过了。",
    "{ct}的 p95 延迟从 {ms}ms 降到 {ms2}ms。",
    "和{cp}一起排查了 {host} 上的{ct}问题，原因是 {tool} 配置写错了。",
    "{proj} 项目的{ct}完成了 {pct}%，剩下的下周{cday}补上。",
    "提醒：每周{cday} {time} 跟{cp}对一下{ct}。",
    "{cp}负责{ct}，{p} 负责 {t}。",
    "{month}月{dom}日上线了 {proj} {ver}，{ct}没有再出现。",
    "预算：{ct}本季度不超过 {k} 万元。",
    "{cp}请假{small}天，{cp2}代班。",
    "回滚到 {ver}，因为 {tool} 超时 {n} 秒。",
    "用户希望回答简短一些，命令放在代码块里。",
    "把{ct}的笔记整理到 memory/projects/{proj}.md 里。",
    "{ct}还有 {n} 个问题没解决，{cp}在跟进。",
    "结论：{ct}维持现状，{date} 之后再看。",
    "{cp}建议{ct}改用 {tool}，先在测试环境试一周。",
    "今天和{cp}过了一遍{ct}，主要风险是{ct2}。",
)
_EN_DECISIONS: Final = (
    "use {tool} for the {t}, not {tool2}.",
    "{proj} ships {ver} on {date}; no more scope changes.",
    "{p} owns the {t} from now on.",
    "drop {tool} from the {proj} stack by {monthname}.",
    "keep {pref} as the default for the {t}.",
    "the {t} budget stays at ${k}k until {date}.",
)
_CN_DECISIONS: Final = (
    "{ct}用 {tool}，不用 {tool2}。",
    "{proj} {ver} 在{month}月{dom}日发布，之后不再加需求。",
    "{ct}以后由{cp}负责。",
    "{month}月底之前把 {tool} 从 {proj} 里下掉。",
    "{ct}默认{cpref}。",
)
_EN_TASKS: Final = (
    "Renew the {tool} certificate on {host}",
    "Send {p} the {t} summary",
    "Book a room for the {t} on {day}",
    "Review PR #{ticket} for {proj}",
    "Update the {proj} runbook after the {t}",
    "Rotate the {tool} API token",
    "Ask {cp} about the {ct} numbers",
)
_CN_TASKS: Final = (
    "给{cp}发{ct}总结",
    "续期 {host} 的证书",
    "预约{cday}的会议室讨论{ct}",
    "评审 {proj} 的 PR #{ticket}",
    "更新 {proj} 的运维手册",
    "轮换 {tool} 的访问令牌",
)
_BASH_LINES: Final = (
    "docker compose up -d {proj}-api",
    "kubectl -n {proj} rollout restart deploy/{proj}-worker",
    "redis-cli -h {host} --latency",
    "pg_dump -Fc {proj} > /backups/{proj}-{date}.dump",
    "uv run pytest -q tests/test_{mod}.py",
    "rsync -av ~/notes/ {host}:backup/notes/",
    "journalctl -u {proj}.service --since '{date}'",
    "terraform plan -target=module.{proj}",
    "git log --oneline -n {n} -- src/{mod}/",
    "curl -s https://{proj}.internal/healthz | jq .status",
)
_PYTHON_SNIPPETS: Final = (
    "def {fn}(items: list[str]) -> int:\n    return sum(1 for item in items if item)",
    "client = httpx.Client(timeout={n})\n"
    'resp = client.get("https://{proj}.internal/healthz")\n'
    "print(resp.status_code)",
    'for host in ["{host}", "{host2}"]:\n    print(host, check(host, retries={small}))',
    'RETRIES = {small}\nTIMEOUT_S = {n}\nBASE_URL = "https://{proj}.internal/api"',
    "from {mod} import {fn}\n\nresult = {fn}(limit={n})\nassert result, {pct}",
)
_JSON_SNIPPETS: Final = (
    '{{\n  "service": "{proj}-api",\n  "replicas": {small},\n'
    '  "timeout_ms": {ms},\n  "region": "{region}"\n}}',
    '{{"owner": "{p}", "due": "{date}", "status": "{status}"}}',
    '{{\n  "model": "multilingual-e5-small",\n  "batch_size": {n},\n  "max_tokens": 400\n}}',
)

_EN_QUERIES: Final = (
    "{tool} {t}", "{p} decision on {t}", "{t} decision", "{p} preferences",
    "{tool} config {proj}", "when is the {t}", "{t}", "{p} {t}", "why did we pick {tool}",
    "{proj} {ver} rollback", "{t} owner",
)  # fmt: skip
_CN_QUERIES: Final = (
    "{ct}", "{cp} {ct}", "{ct}的结论", "上次{ct}怎么定的", "{cp}负责什么", "{ct} 进度",
    "{cp}的偏好",
)  # fmt: skip
_MIXED_QUERIES: Final = (
    "{tool} {ct}", "部署 {tool}", "{proj} {ct}", "{cp} {tool} 配置", "{ct} p95",
)  # fmt: skip

# Needles: (line template, query template). {N} is the rare token.
_EN_NEEDLES: Final = (
    ("{N} prefers the {proj}-{small} deployment window on {day}s.", "{N} deployment window"),
    ("{N} keeps the spare {tool} recovery key in the grey fireproof box.", "{N} recovery key"),
    ("Agreed with {N}: freeze the {proj} schema until {date}.", "{N} schema freeze"),
    ("{N}'s badge number for the Lisbon office is {num}.", "{N} badge number"),
    ("{N} is allergic to peanuts, so book the Thai place on {day}.", "{N} allergic"),
    ("The {proj} invoice from {N} is due on {date}; pay it from the ops card.", "{N} invoice"),
    ("{N} wants weekly status notes as bullets, never prose.", "{N} status notes"),
)
_CN_NEEDLES: Final = (
    ("{N}决定把周会改到周四下午。", "{N} 周会"),
    ("{N}的护照放在书房第二个抽屉里。", "{N} 护照"),
    ("{N}负责 {proj} 的 {tool} 迁移，{month}月{dom}日前完成。", "{N} 迁移"),
    ("{N}不吃香菜，订餐时记得备注。", "{N} 香菜"),
    ("和{N}约好每月{dom}号对账。", "{N} 对账"),
    ("{N}的车位编号是 B2-{num}。", "{N} 车位"),
)
_NAME_ONSETS: Final = ("z", "qu", "v", "x", "k", "th", "br", "gr", "dr", "sk", "vr", "zh", "kr")
_NAME_VOWELS: Final = ("o", "a", "e", "i", "u", "y", "ae", "ou")
_NAME_MIDDLES: Final = ("rv", "th", "x", "nd", "lk", "z", "rn", "sk", "v", "q", "lv")
_NAME_ENDINGS: Final = ("th", "x", "nd", "rk", "z", "q", "sk", "v", "lm")
_RARE_HAN_CANDIDATES: Final = (
    "翀蕤甄燊淼犇骉垚焱旻玥珺琰瑀璟晔昶煜祎禛筠婧嫣妤姝珩琛瑾璇翊翎霁霈颢骞龑曦臻馨懿"
    "彧湛澈潇濯炜烨熠璐琬琨瑄瑗皓睿祺禹笙箫綦缇羿翮翯耘"
)
_ROOT_HEADINGS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "MEMORY": (
        ("Preferences: {t}", "Decision: {t}", "People: {p}", "Recurring: {t}"),
        ("长期偏好：{ct}", "重要决定：{ct}", "常用工具：{tool}"),
    ),
    "USER": (
        ("Work style", "Communication", "Schedule: {t}", "Preferences: {pref}"),
        ("工作习惯", "沟通偏好", "作息：{ct}"),
    ),
    "PROJECT": (
        ("Architecture: {t}", "Conventions: {tool}", "Runbook: {t}"),
        ("架构：{ct}", "约定：{tool}", "运维手册：{ct}"),
    ),
}
_PREAMBLES: Final = {
    "MEMORY": "# MEMORY\n\nDurable facts, preferences and decisions. 长期记忆。\n\n",
    "USER": "# USER\n\nWho the user is and how they like to work. 用户画像。\n\n",
    "PROJECT": "# PROJECT\n\nConventions and architecture notes for the current project.\n\n",
}
_TOPIC_PREAMBLE: Final = "# {name}\n\nNotes on the {name} project. 项目笔记。\n\n"
# Repeats weight the choice: most headings are just the topic.
_EN_TOPIC_HEADINGS: Final = ("{t}", "{t}", "{t}", "{tool} {t}")
_CN_TOPIC_HEADINGS: Final = (
    "{ct}", "{ct}", "{ct}", "{tool} {ct}", "部署 {tool} {ct} v{small}", "{proj} {ct}",
)  # fmt: skip
_EN_META: Final = "Owner: {p} · Due: {date} · Status: {status}"
_CN_META: Final = "负责人：{cp} · 截止：{date} · 状态：{cstatus}"
_EN_DECISION: Final = "**Decision:** "
_CN_DECISION: Final = "**决定：**"
_FENCES: Final = ("```bash\n", "```python\n", "```json\n", "\n```")


def _emitted_text() -> str:
    """Every literal the generator can emit, lowercased, to vet rare tokens against."""
    pools: tuple[tuple[str, ...], ...] = (
        _EN_PEOPLE, _CN_PEOPLE, _TOOLS, _PROJECTS, _EN_TOPICS, _CN_TOPICS, _EN_PREFS,
        _CN_PREFS, _EN_DAYS, _CN_DAYS, _MONTHS, _EN_STATUS, _CN_STATUS, _ROLES, _MODULES,
        _FUNCTIONS, _REGIONS, _EN_SENTENCES, _CN_SENTENCES, _EN_DECISIONS, _CN_DECISIONS,
        _EN_TASKS, _CN_TASKS, _BASH_LINES, _PYTHON_SNIPPETS, _JSON_SNIPPETS, _EN_QUERIES,
        _CN_QUERIES, _MIXED_QUERIES, _EN_TOPIC_HEADINGS, _CN_TOPIC_HEADINGS, _FENCES,
        (_TOPIC_PREAMBLE, _EN_META, _CN_META, _EN_DECISION, _CN_DECISION),
        tuple(_PREAMBLES.values()),
        tuple(h for pair in _ROOT_HEADINGS.values() for pool in pair for h in pool),
        tuple(text for pair in _EN_NEEDLES + _CN_NEEDLES for text in pair),
    )  # fmt: skip
    return "\n".join(text for pool in pools for text in pool).lower()


_EMITTED_TEXT: Final = _emitted_text()

# ---------------------------------------------------------------- fillers

_Filler = Callable[[random.Random], str]
_DATE_LOW: Final = date(2024, 1, 1).toordinal()
_DATE_HIGH: Final = NEWEST_DAY.toordinal()


def _date(rng: random.Random) -> str:
    return date.fromordinal(rng.randint(_DATE_LOW, _DATE_HIGH)).isoformat()


def _host(rng: random.Random) -> str:
    return f"{rng.choice(_PROJECTS)}-{rng.choice(_ROLES)}-{rng.randint(1, 40):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(7, 22):02d}:{rng.choice(('00', '15', '30', '45'))}"


def _version(rng: random.Random) -> str:
    return f"v{rng.randint(0, 4)}.{rng.randint(0, 24)}.{rng.randint(0, 40)}"


def _pick(pool: Sequence[str]) -> _Filler:
    return lambda rng: rng.choice(pool)


def _number(low: int, high: int) -> _Filler:
    return lambda rng: str(rng.randint(low, high))


_FILLERS: Final[dict[str, _Filler]] = {
    "p": _pick(_EN_PEOPLE),
    "p2": _pick(_EN_PEOPLE),
    "cp": _pick(_CN_PEOPLE),
    "cp2": _pick(_CN_PEOPLE),
    "tool": _pick(_TOOLS),
    "tool2": _pick(_TOOLS),
    "proj": _pick(_PROJECTS),
    "t": _pick(_EN_TOPICS),
    "ct": _pick(_CN_TOPICS),
    "ct2": _pick(_CN_TOPICS),
    "pref": _pick(_EN_PREFS),
    "pref2": _pick(_EN_PREFS),
    "cpref": _pick(_CN_PREFS),
    "cpref2": _pick(_CN_PREFS),
    "day": _pick(_EN_DAYS),
    "cday": _pick(_CN_DAYS),
    "monthname": _pick(_MONTHS),
    "status": _pick(_EN_STATUS),
    "cstatus": _pick(_CN_STATUS),
    "mod": _pick(_MODULES),
    "fn": _pick(_FUNCTIONS),
    "region": _pick(_REGIONS),
    "n": _number(2, 40),
    "n2": _number(1, 12),
    "small": _number(1, 9),
    "ms": _number(40, 900),
    "ms2": _number(8, 300),
    "pct": _number(3, 99),
    "k": _number(2, 80),
    "month": _number(1, 12),
    "dom": _number(1, 28),
    "ticket": _number(100, 9999),
    "num": _number(1000, 9999),
    "date": _date,
    "host": _host,
    "host2": _host,
    "time": _time,
    "ver": _version,
}


class _Slots(dict[str, str]):
    """Placeholder values drawn lazily, so a template costs only the draws it uses."""

    __slots__ = ("_rng",)

    def __init__(self, rng: random.Random, **fixed: str) -> None:
        super().__init__(fixed)
        self._rng = rng

    def __missing__(self, key: str) -> str:
        make = _FILLERS[key]
        value = make(self._rng)
        # "{tool} ... {tool2}" should name two tools; a few redraws make that
        # almost certain without looping forever on tiny pools.
        base = self.get(key[:-1]) if key.endswith("2") else None
        for _ in range(3):
            if value != base:
                break
            value = make(self._rng)
        self[key] = value
        return value


def _fill(rng: random.Random, template: str) -> str:
    return template.format_map(_Slots(rng))


# ---------------------------------------------------------------- blocks


def _sentence(rng: random.Random, chinese: bool) -> str:
    return _fill(rng, rng.choice(_CN_SENTENCES if chinese else _EN_SENTENCES))


def _paragraph(rng: random.Random, chinese: bool) -> str:
    glue = "" if chinese else " "
    return glue.join(_sentence(rng, chinese) for _ in range(rng.randint(1, 3)))


def _bullets(rng: random.Random, chinese: bool) -> str:
    # Distinct templates: a list repeating one canned line reads as generated.
    templates = rng.sample(_CN_SENTENCES if chinese else _EN_SENTENCES, rng.randint(2, 5))
    return "\n".join("- " + _fill(rng, template) for template in templates)


def _checklist(rng: random.Random, chinese: bool) -> str:
    templates = rng.sample(_CN_TASKS if chinese else _EN_TASKS, rng.randint(2, 4))
    return "\n".join(
        rng.choice(("- [ ] ", "- [x] ")) + _fill(rng, template) for template in templates
    )


def _decision(rng: random.Random, chinese: bool) -> str:
    if chinese:
        return _CN_DECISION + _fill(rng, rng.choice(_CN_DECISIONS))
    return _EN_DECISION + _fill(rng, rng.choice(_EN_DECISIONS))


def _meta(rng: random.Random, chinese: bool) -> str:
    return _fill(rng, _CN_META if chinese else _EN_META)


def _code(rng: random.Random, chinese: bool) -> str:
    roll = rng.random()
    if roll < 0.45:
        lines = [_fill(rng, rng.choice(_BASH_LINES)) for _ in range(rng.randint(2, 4))]
        return "```bash\n" + "\n".join(lines) + "\n```"
    if roll < 0.75:
        return "```python\n" + _fill(rng, rng.choice(_PYTHON_SNIPPETS)) + "\n```"
    return "```json\n" + _fill(rng, rng.choice(_JSON_SNIPPETS)) + "\n```"


# Cumulative weights: Chinese notes carry fewer code blocks, as they do in practice.
_Block = Callable[[random.Random, bool], str]
_EN_BLOCKS: Final[tuple[tuple[float, _Block], ...]] = (
    (0.30, _paragraph), (0.60, _bullets), (0.68, _checklist), (0.78, _decision),
    (0.85, _meta), (1.0, _code),
)  # fmt: skip
_CN_BLOCKS: Final[tuple[tuple[float, _Block], ...]] = (
    (0.33, _paragraph), (0.66, _bullets), (0.75, _checklist), (0.86, _decision),
    (0.93, _meta), (1.0, _code),
)  # fmt: skip


def _block(rng: random.Random, chinese: bool) -> str:
    roll = rng.random()
    for bound, make in _CN_BLOCKS if chinese else _EN_BLOCKS:
        if roll < bound:
            return make(rng, chinese)
    return _paragraph(rng, chinese)


def _section(rng: random.Random, heading: str, chinese: bool, needle: str | None) -> str:
    """One ``##`` section sized for one chunk, ending in a blank line.

    The needle goes in as its own paragraph so its line is exactly the text
    the benchmark looks for.
    """
    head = f"## {heading}\n\n"
    total = estimate_tokens(head)
    blocks: list[str] = []
    if needle is not None:
        total += estimate_tokens(needle + "\n\n")
    target = rng.randint(_TARGET_LOW, _TARGET_HIGH)
    while total < target:
        block = _block(rng, chinese)
        cost = estimate_tokens(block + "\n\n")
        if total + cost > _HARD_MAX:
            block = _sentence(rng, chinese)
            cost = estimate_tokens(block + "\n\n")
            if total + cost > _HARD_MAX:
                break
        blocks.append(block)
        total += cost
    if needle is not None:
        blocks.insert(rng.randint(0, len(blocks)), needle)
    return head + "\n\n".join(blocks) + "\n\n"


# ---------------------------------------------------------------- files


@dataclass(frozen=True, slots=True)
class Needle:
    """A fact planted once, for recall checks: searching `query` must find `path`."""

    query: str
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What was written; `sections` is the expected chunk count."""

    files: int
    sections: int
    bytes: int
    needles: tuple[Needle, ...]


@dataclass(frozen=True, slots=True)
class _FilePlan:
    path: str
    kind: str  # "MEMORY", "USER", "PROJECT", "daily" or "topic"
    label: str  # the daily date or topic project name
    sections: int


def _plan_files(rng: random.Random, sections: int) -> list[_FilePlan]:
    """Split `sections` over files; daily files get 3-12 each and take the bulk."""
    budget = sections
    per_root = min(_ROOT_MAX_SECTIONS, budget // 30)
    root_counts = [per_root] * 3
    budget -= 3 * per_root
    topic_names = rng.sample(_PROJECTS, min(_TOPIC_MAX_FILES, budget // 150))
    topic_counts = [rng.randint(6, 15) for _ in topic_names]
    budget -= sum(topic_counts)
    daily_counts: list[int] = []
    while budget >= _DAILY_MIN_SECTIONS:
        if budget <= _DAILY_MAX_SECTIONS:
            count = budget
        else:
            # Never leave 1-2 sections over: a daily file needs at least 3.
            count = rng.randint(
                _DAILY_MIN_SECTIONS, min(_DAILY_MAX_SECTIONS, budget - _DAILY_MIN_SECTIONS)
            )
        daily_counts.append(count)
        budget -= count
    root_counts[0] += budget  # the 0-2 left over in a tiny corpus
    plans = [
        _FilePlan(name, name.removesuffix(".md"), "", count)
        for name, count in zip(("MEMORY.md", "USER.md", "PROJECT.md"), root_counts, strict=True)
    ]
    plans += [
        _FilePlan(f"memory/projects/{name}.md", "topic", name, count)
        for name, count in zip(topic_names, topic_counts, strict=True)
    ]
    for back, count in enumerate(daily_counts):
        day = (NEWEST_DAY - timedelta(days=back)).isoformat()
        plans.append(_FilePlan(f"memory/{day}.md", "daily", day, count))
    return plans


def _preamble(plan: _FilePlan) -> str:
    if plan.kind == "daily":
        return f"# {plan.label}\n\n"
    if plan.kind == "topic":
        return _TOPIC_PREAMBLE.format(name=plan.label)
    return _PREAMBLES[plan.kind]


def _topic_heading(rng: random.Random, chinese: bool) -> str:
    return _fill(rng, rng.choice(_CN_TOPIC_HEADINGS if chinese else _EN_TOPIC_HEADINGS))


def _headings(rng: random.Random, plan: _FilePlan, languages: Sequence[bool]) -> list[str]:
    if plan.kind == "daily":
        minutes = sorted(rng.sample(range(7 * 60, 24 * 60), len(languages)))
        return [
            f"{m // 60:02d}:{m % 60:02d} {_topic_heading(rng, chinese)}"
            for m, chinese in zip(minutes, languages, strict=True)
        ]
    if plan.kind == "topic":
        dates = sorted(_date(rng) for _ in languages)
        return [
            f"{day} {_topic_heading(rng, chinese)}"
            for day, chinese in zip(dates, languages, strict=True)
        ]
    english, chinese_pool = _ROOT_HEADINGS[plan.kind]
    return [_fill(rng, rng.choice(chinese_pool if c else english)) for c in languages]


def _rare_names(rng: random.Random, count: int, forbidden: str) -> list[str]:
    """Invented capitalised words found in no pool, so each names one file."""
    names: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(names) < count:
        attempts += 1
        if attempts > 50 * count + 1000:
            raise ValueError(f"cannot invent {count} distinct rare names")
        word = (
            rng.choice(_NAME_ONSETS)
            + rng.choice(_NAME_VOWELS)
            + rng.choice(_NAME_MIDDLES)
            + rng.choice(_NAME_VOWELS)
            + rng.choice(_NAME_ENDINGS)
        )
        if word in seen or word in forbidden:
            continue
        seen.add(word)
        names.append(word.capitalize())
    return names


def _rare_han_pairs(rng: random.Random, count: int, forbidden: str) -> list[str]:
    """Two-character names from Han characters no pool uses.

    Disjoint pairs come first so a small needle set shares not even a unigram;
    beyond that, ordered pairs stay distinct, which keeps each bigram unique.
    """
    chars = [ch for ch in dict.fromkeys(_RARE_HAN_CANDIDATES) if ch not in forbidden]
    rng.shuffle(chars)
    pairs = [chars[i] + chars[i + 1] for i in range(0, len(chars) - 1, 2)]
    if count > len(pairs):
        used = set(pairs)
        extra = [a + b for a in chars for b in chars if a != b and a + b not in used]
        rng.shuffle(extra)
        pairs += extra
    if count > len(pairs):
        raise ValueError(f"at most {len(pairs)} Chinese needles are possible")
    return pairs[:count]


def _make_needles(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """(line, query) pairs; every third one is Chinese."""
    forbidden = _EMITTED_TEXT
    chinese_count = round(count / 3)
    is_chinese = [i % 3 == 2 for i in range(count)]
    # round() may give one more than every-third; flip the last English slot if so.
    shortfall = chinese_count - sum(is_chinese)
    for i in range(count - 1, -1, -1):
        if shortfall <= 0:
            break
        if not is_chinese[i]:
            is_chinese[i] = True
            shortfall -= 1
    english = iter(_rare_names(rng, count - chinese_count, forbidden))
    chinese = iter(_rare_han_pairs(rng, chinese_count, forbidden))
    made: list[tuple[str, str]] = []
    for cn in is_chinese:
        name = next(chinese) if cn else next(english)
        line, query = rng.choice(_CN_NEEDLES if cn else _EN_NEEDLES)
        slots = _Slots(rng, N=name)
        made.append((line.format_map(slots), query.format_map(slots)))
    return made


def _prepare_root(root: Path, with_topics: bool) -> None:
    if root.exists() or root.is_symlink():
        if not root.is_dir() or any(root.iterdir()):
            raise FileExistsError(f"benchmark workspace must be empty or absent: {root}")
    else:
        root.mkdir(parents=True)
    (root / "memory").mkdir()
    if with_topics:
        (root / "memory" / "projects").mkdir()


def generate_workspace(
    root: Path, sections: int, *, seed: int = 0, needles: int = 20
) -> CorpusStats:
    """Write a synthetic workspace of exactly `sections` chunk-sized sections into `root`.

    Refuses a non-empty `root` so a typo can never mix synthetic notes into
    someone's real memory. A section holds at most one needle, so `needles`
    is capped at `sections` (the stats list what was planted).
    """
    if sections < 0:
        raise ValueError("sections must be >= 0")
    if needles < 0:
        raise ValueError("needles must be >= 0")
    needles = min(needles, sections)
    rng = random.Random(seed)
    plans = _plan_files(rng, sections)
    planted = _make_needles(rng, needles)
    needle_at = {spot: i for i, spot in enumerate(rng.sample(range(sections), needles))}
    _prepare_root(root, any(plan.kind == "topic" for plan in plans))

    found: list[Needle | None] = [None] * needles
    index = 0
    total_bytes = 0
    for plan in plans:
        languages = [rng.random() < CHINESE_SECTION_SHARE for _ in range(plan.sections)]
        parts = [_preamble(plan)]
        for heading, chinese in zip(_headings(rng, plan, languages), languages, strict=True):
            slot = needle_at.get(index)
            needle_line = None
            if slot is not None:
                needle_line, query = planted[slot]
                found[slot] = Needle(query=query, path=plan.path, text=needle_line)
            parts.append(_section(rng, heading, chinese, needle_line))
            index += 1
        data = "".join(parts).rstrip("\n").encode("utf-8") + b"\n"
        (root / plan.path).write_bytes(data)
        total_bytes += len(data)
    return CorpusStats(
        files=len(plans),
        sections=index,
        bytes=total_bytes,
        needles=tuple(n for n in found if n is not None),
    )


def sample_queries(count: int, *, seed: int = 0) -> list[str]:
    """Queries a user might type, from the corpus vocabulary (half English, 30% Chinese)."""
    rng = random.Random(f"openmemory-bench-queries:{seed}")
    queries: list[str] = []
    for _ in range(count):
        roll = rng.random()
        pool = _EN_QUERIES if roll < 0.5 else _CN_QUERIES if roll < 0.8 else _MIXED_QUERIES
        queries.append(_fill(rng, rng.choice(pool)))
    return queries


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.corpus ROOT --sections N [--seed S] [--needles K]``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.corpus", description="Write a synthetic memory workspace."
    )
    parser.add_argument("root", type=Path)
    parser.add_argument("--sections", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--needles", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        stats = generate_workspace(args.root, args.sections, seed=args.seed, needles=args.needles)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(asdict(stats), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
