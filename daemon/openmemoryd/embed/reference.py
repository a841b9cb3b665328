"""Reference passages: how close a query comes to text about nothing in particular.

Small embedding models are anisotropic: every text lands in a narrow cone,
and some queries sit near its centre. multilingual-e5-small gives the
nonsense query ``zzzqqq`` a cosine of 0.82 with a short note about someone's
job, as high as "what drink does Wei like" scores against 魏喜欢喝乌龙茶.
A fixed cosine bar cannot tell those apart; the query's own baseline can.
`LocalEmbedder.null_cosine` is a query's mean cosine with the `NULL_TOP`
of these everyday passages it is closest to: a match that does not beat
them by a margin is not evidence that the memory holds what was asked.
(The mean of three rather than the maximum: one passage sharing the
query's topic — a meeting, a recipe — would otherwise set the bar too
high for real notes on that topic.)

Measured on the e5 model (the workspace and queries of
tests/test_e2e_honest_empty.py and tests/test_e2e_semantic.py): six
unrelated queries in English, Chinese and Russian beat their baseline by
at most 0.030; twelve real questions, cross-language ones included, by
0.040 to 0.118. The gap is narrow: the evidence width
(`LocalModel.evidence_width`, 0.1) puts the default ``min_score`` of 0.35
at a margin of 0.035, between the two. It only decides whether a match by
meaning alone counts; keyword matches and the ranking are not affected.
"""

from __future__ import annotations

from typing import Final

__all__ = ["NULL_TOP", "REFERENCE_PASSAGES"]

NULL_TOP: Final = 3

REFERENCE_PASSAGES: Final = (
    "The weather forecast for tomorrow says light rain in the afternoon.",
    "A recipe for pancakes with maple syrup and fresh berries.",
    "Notes from a meeting about next quarter's budget.",
    "The history of the Roman empire in a few paragraphs.",
    "How to change a flat tire on the side of the road.",
    "The train leaves the station at a quarter past eight.",
    "A short review of a new smartphone camera.",
    "Tips for keeping houseplants alive through the winter.",
    "今天天气很好，适合去公园散步。",
    "这家餐厅的菜很好吃，价格也不贵。",
    "会议改到下周三下午三点。",
    "Сегодня хорошая погода, можно погулять в парке.",
    "Поезд отправляется в восемь пятнадцать.",
    "Рецепт простого супа из овощей.",
    "Ein kurzer Bericht über das Wetter am Wochenende.",
    "Un resumen breve de las noticias del día.",
)
