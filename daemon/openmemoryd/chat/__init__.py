"""Chat models and the staged summary that `compact` asks them for."""

from __future__ import annotations

from openmemoryd.chat.models import (
    ChatError,
    ChatModel,
    ChatNotConfigured,
    OllamaChat,
    OpenAIChat,
    build_chat,
    not_configured_message,
)
from openmemoryd.chat.staging import (
    ChatLine,
    conversation_tokens,
    cut_to_budget,
    message_tokens,
    prepare,
    split_stages,
)
from openmemoryd.chat.summarize import (
    DEFAULT_MERGE_PROMPT,
    DEFAULT_SUMMARY_PROMPT,
    Complete,
    StagedSummary,
    clean_summary,
    stage_budget,
    summarize_in_stages,
)

__all__ = [
    "DEFAULT_MERGE_PROMPT",
    "DEFAULT_SUMMARY_PROMPT",
    "ChatError",
    "ChatLine",
    "ChatModel",
    "ChatNotConfigured",
    "Complete",
    "OllamaChat",
    "OpenAIChat",
    "StagedSummary",
    "build_chat",
    "clean_summary",
    "conversation_tokens",
    "cut_to_budget",
    "message_tokens",
    "not_configured_message",
    "prepare",
    "split_stages",
    "stage_budget",
    "summarize_in_stages",
]
