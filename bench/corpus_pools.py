"""The word pools the synthetic corpus (`bench.corpus`) draws from: people,
tools, topics, sentences, decisions, tasks, code, queries and needles, in
English and Chinese, and the templates that combine them."""

from __future__ import annotations

from typing import Final

EN_PEOPLE: Final = (
    "Alice", "Bob", "Priya", "Marco", "Sofia", "Kenji", "Fatima", "Lars", "Nadia", "Omar",
    "Tomas", "Yuki", "Grace", "Dmitri", "Ana", "Ravi", "Elena", "Jonas", "Mei", "Hannah",
    "Luis", "Ingrid", "Samir", "Chloe", "Viktor", "Amara", "Felix", "Rosa", "Theo", "Leila",
)  # fmt: skip
CN_PEOPLE: Final = (
    "阿明", "小王", "李雷", "韩梅梅", "张伟", "王芳", "刘洋", "陈静", "老周", "小林",
    "赵磊", "孙丽", "黄涛", "吴敏", "郑凯", "何佳", "高远", "马超", "林晓", "宋雨",
)  # fmt: skip
TOOLS: Final = (
    "Redis", "PostgreSQL", "SQLite", "Docker", "Kubernetes", "Terraform", "Grafana",
    "Prometheus", "nginx", "systemd", "GitHub Actions", "pytest", "ruff", "mypy", "FastAPI",
    "trio", "Celery", "Kafka", "S3", "Cloudflare", "Sentry", "tmux", "Homebrew", "uv",
    "Ansible", "MinIO", "ClickHouse", "Elasticsearch", "Caddy", "WireGuard", "Tailscale",
    "Obsidian", "Neovim", "VS Code", "Jupyter", "DuckDB", "pandas", "Airflow", "RabbitMQ",
    "Vault",
)  # fmt: skip
PROJECTS: Final = (
    "atlas", "kestrel", "nebula", "orchard", "lighthouse", "quartz", "harbor", "ember",
    "juniper", "meridian", "falcon", "sequoia", "tundra", "cobalt", "willow",
)  # fmt: skip
EN_TOPICS: Final = (
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
CN_TOPICS: Final = (
    "缓存方案", "部署流程", "周会纪要", "搜索延迟", "数据迁移", "值班交接", "接口限流",
    "向量索引", "备份策略", "测试不稳定", "发布说明", "设计评审", "出差安排", "看牙预约",
    "读书清单", "预算审批", "性能优化", "用户反馈", "日志告警", "权限管理", "季度规划",
    "登录问题", "成本报表", "压力测试", "灰度发布", "客户回访", "招聘面试", "事故复盘",
    "磁盘告警", "域名切换", "单点登录", "数据导出", "团建安排", "报税材料", "健身计划",
    "租房合同", "代码审查", "监控大盘", "模型评测", "需求排期",
)  # fmt: skip
EN_PREFS: Final = (
    "dark mode", "short answers", "detailed explanations", "morning meetings",
    "async updates", "Markdown tables", "plain text emails", "type hints everywhere",
    "small PRs", "squash merges", "rebasing", "metric units", "24-hour time",
    "British spelling", "oat milk", "window seats", "standing desks", "trains over flights",
)  # fmt: skip
CN_PREFS: Final = (
    "简短的回答", "详细的解释", "上午开会", "异步沟通", "表格形式", "纯文本邮件", "小步提交",
    "中文回复", "靠窗的座位", "高铁出行", "无糖咖啡", "周报用要点", "先给结论", "安静的会议室",
)  # fmt: skip
EN_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
CN_DAYS: Final = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
MONTHS: Final = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
EN_STATUS: Final = ("open", "blocked", "done", "in review", "waiting on vendor")
CN_STATUS: Final = ("进行中", "已完成", "阻塞", "待评审", "等供应商")
ROLES: Final = ("db", "api", "worker", "cache", "web", "batch")
MODULES: Final = ("search", "index", "chunker", "embed", "watcher", "config", "store", "server")
FUNCTIONS: Final = (
    "dedupe_hits", "load_config", "rotate_logs", "merge_scores", "parse_daily",
    "flush_queue", "retry_upload", "warm_cache",
)  # fmt: skip
REGIONS: Final = ("eu-west-1", "us-east-2", "ap-southeast-1", "cn-north-1")

EN_SENTENCES: Final = (
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
CN_SENTENCES: Final = (
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
EN_DECISIONS: Final = (
    "use {tool} for the {t}, not {tool2}.",
    "{proj} ships {ver} on {date}; no more scope changes.",
    "{p} owns the {t} from now on.",
    "drop {tool} from the {proj} stack by {monthname}.",
    "keep {pref} as the default for the {t}.",
    "the {t} budget stays at ${k}k until {date}.",
)
CN_DECISIONS: Final = (
    "{ct}用 {tool}，不用 {tool2}。",
    "{proj} {ver} 在{month}月{dom}日发布，之后不再加需求。",
    "{ct}以后由{cp}负责。",
    "{month}月底之前把 {tool} 从 {proj} 里下掉。",
    "{ct}默认{cpref}。",
)
EN_TASKS: Final = (
    "Renew the {tool} certificate on {host}",
    "Send {p} the {t} summary",
    "Book a room for the {t} on {day}",
    "Review PR #{ticket} for {proj}",
    "Update the {proj} runbook after the {t}",
    "Rotate the {tool} API token",
    "Ask {cp} about the {ct} numbers",
)
CN_TASKS: Final = (
    "给{cp}发{ct}总结",
    "续期 {host} 的证书",
    "预约{cday}的会议室讨论{ct}",
    "评审 {proj} 的 PR #{ticket}",
    "更新 {proj} 的运维手册",
    "轮换 {tool} 的访问令牌",
)
BASH_LINES: Final = (
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
PYTHON_SNIPPETS: Final = (
    "def {fn}(items: list[str]) -> int:\n    return sum(1 for item in items if item)",
    "client = httpx.Client(timeout={n})\n"
    'resp = client.get("https://{proj}.internal/healthz")\n'
    "print(resp.status_code)",
    'for host in ["{host}", "{host2}"]:\n    print(host, check(host, retries={small}))',
    'RETRIES = {small}\nTIMEOUT_S = {n}\nBASE_URL = "https://{proj}.internal/api"',
    "from {mod} import {fn}\n\nresult = {fn}(limit={n})\nassert result, {pct}",
)
JSON_SNIPPETS: Final = (
    '{{\n  "service": "{proj}-api",\n  "replicas": {small},\n'
    '  "timeout_ms": {ms},\n  "region": "{region}"\n}}',
    '{{"owner": "{p}", "due": "{date}", "status": "{status}"}}',
    '{{\n  "model": "multilingual-e5-small",\n  "batch_size": {n},\n  "max_tokens": 400\n}}',
)

EN_QUERIES: Final = (
    "{tool} {t}", "{p} decision on {t}", "{t} decision", "{p} preferences",
    "{tool} config {proj}", "when is the {t}", "{t}", "{p} {t}", "why did we pick {tool}",
    "{proj} {ver} rollback", "{t} owner",
)  # fmt: skip
CN_QUERIES: Final = (
    "{ct}", "{cp} {ct}", "{ct}的结论", "上次{ct}怎么定的", "{cp}负责什么", "{ct} 进度",
    "{cp}的偏好",
)  # fmt: skip
MIXED_QUERIES: Final = (
    "{tool} {ct}", "部署 {tool}", "{proj} {ct}", "{cp} {tool} 配置", "{ct} p95",
)  # fmt: skip

# Needles: (line template, query template). {N} is the rare token.
EN_NEEDLES: Final = (
    ("{N} prefers the {proj}-{small} deployment window on {day}s.", "{N} deployment window"),
    ("{N} keeps the spare {tool} recovery key in the grey fireproof box.", "{N} recovery key"),
    ("Agreed with {N}: freeze the {proj} schema until {date}.", "{N} schema freeze"),
    ("{N}'s badge number for the Lisbon office is {num}.", "{N} badge number"),
    ("{N} is allergic to peanuts, so book the Thai place on {day}.", "{N} allergic"),
    ("The {proj} invoice from {N} is due on {date}; pay it from the ops card.", "{N} invoice"),
    ("{N} wants weekly status notes as bullets, never prose.", "{N} status notes"),
)
CN_NEEDLES: Final = (
    ("{N}决定把周会改到周四下午。", "{N} 周会"),
    ("{N}的护照放在书房第二个抽屉里。", "{N} 护照"),
    ("{N}负责 {proj} 的 {tool} 迁移，{month}月{dom}日前完成。", "{N} 迁移"),
    ("{N}不吃香菜，订餐时记得备注。", "{N} 香菜"),
    ("和{N}约好每月{dom}号对账。", "{N} 对账"),
    ("{N}的车位编号是 B2-{num}。", "{N} 车位"),
)
NAME_ONSETS: Final = ("z", "qu", "v", "x", "k", "th", "br", "gr", "dr", "sk", "vr", "zh", "kr")
NAME_VOWELS: Final = ("o", "a", "e", "i", "u", "y", "ae", "ou")
NAME_MIDDLES: Final = ("rv", "th", "x", "nd", "lk", "z", "rn", "sk", "v", "q", "lv")
NAME_ENDINGS: Final = ("th", "x", "nd", "rk", "z", "q", "sk", "v", "lm")
RARE_HAN_CANDIDATES: Final = (
    "翀蕤甄燊淼犇骉垚焱旻玥珺琰瑀璟晔昶煜祎禛筠婧嫣妤姝珩琛瑾璇翊翎霁霈颢骞龑曦臻馨懿"
    "彧湛澈潇濯炜烨熠璐琬琨瑄瑗皓睿祺禹笙箫綦缇羿翮翯耘"
)
ROOT_HEADINGS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
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
PREAMBLES: Final = {
    "MEMORY": "# MEMORY\n\nDurable facts, preferences and decisions. 长期记忆。\n\n",
    "USER": "# USER\n\nWho the user is and how they like to work. 用户画像。\n\n",
    "PROJECT": "# PROJECT\n\nConventions and architecture notes for the current project.\n\n",
}
TOPIC_PREAMBLE: Final = "# {name}\n\nNotes on the {name} project. 项目笔记。\n\n"
# Repeats weight the choice: most headings are just the topic.
EN_TOPIC_HEADINGS: Final = ("{t}", "{t}", "{t}", "{tool} {t}")
CN_TOPIC_HEADINGS: Final = (
    "{ct}", "{ct}", "{ct}", "{tool} {ct}", "部署 {tool} {ct} v{small}", "{proj} {ct}",
)  # fmt: skip
EN_META: Final = "Owner: {p} · Due: {date} · Status: {status}"
CN_META: Final = "负责人：{cp} · 截止：{date} · 状态：{cstatus}"
EN_DECISION: Final = "**Decision:** "
CN_DECISION: Final = "**决定：**"
FENCES: Final = ("```bash\n", "```python\n", "```json\n", "\n```")
