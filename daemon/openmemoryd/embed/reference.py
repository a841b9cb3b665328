"""Reference passages: how close a query comes to text about nothing in particular.

Small embedding models are anisotropic: every text lands in a narrow cone,
and some queries sit near its centre. multilingual-e5-small gives the
nonsense query ``zzzqqq`` a cosine of 0.82 with a short note about someone's
job, as high as "what drink does Wei like" scores against 魏喜欢喝乌龙茶.
A fixed cosine bar cannot tell those apart; the query's own baseline can.
`LocalEmbedder.null_cosine` is a query's mean cosine with the `NULL_TOP`
of these passages it is closest to: a match that does not beat them by a
margin is not evidence that the memory holds what was asked.

The passages are everyday and encyclopaedic text on some sixty topics,
about twenty each in English, Chinese and Russian, each topic in one
language only. The model puts a text near others of its own language, so
a query's nearest passages are mostly in its language: with three Chinese
passages, a Chinese query's baseline was their mean whatever it asked, and
a Chinese note on anything cleared it (baroque opera, Icelandic sagas and
deep-sea fish were all answered from notes on payments and a NAS). A topic
written in several languages would be among the nearest to a query on it
several times over and raise the bar for real notes on that topic; one
passage of five moves it by a fifth. (The mean of five rather than the
maximum, for the same reason: a question about a car's brakes against the
passage on brake pads.)

The bar: on the calibration queries (the workspaces of
tests/test_e2e_honest_empty.py and tests/test_e2e_semantic.py), unrelated
ones beat their baseline by at most 0.017 and real ones by 0.029 ("例会是
什么时候" for "每周一上午开周会") to 0.100. The evidence width
(`LocalModel.evidence_width`, 0.072) puts the default ``min_score`` of
0.35 at a margin of 0.025, between the two. (With the first sixteen
passages and the mean of three it was 0.1 and 0.035, between 0.030 and
0.040.) It only decides whether a match by meaning alone counts; keyword
matches and the ranking are not affected.

Measured through the daemon on the notes workspaces of bench.multilingual
(16 unrelated queries a language, ten of them written before these
passages were chosen and on none of their topics; 60 real questions a
language): unrelated queries answered 5, 8 and 8 of 16 before (Russian,
Chinese, English), now 4, 4 and 7; of the ten written apart, 3, 6 and 6
before, now 2, 2 and 4; real questions whose default answer holds evidence
59, 60 and 57 of 60 before, now 59, 60 and 58.

A note in another language than the query's is measured against the same
baseline, but its cosine is first raised by part of the query's distance to
that language's text about nothing (`Baseline`): the passages' own scripts
(`REFERENCE_SCRIPTS`) give that distance for each query.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from openmemoryd.text.scripts import main_script, script_shares

__all__ = [
    "CROSS_SCRIPT_SHARE",
    "NULL_TOP",
    "REFERENCE_PASSAGES",
    "REFERENCE_SCRIPTS",
    "Baseline",
    "still_apart",
]

NULL_TOP: Final = 5
# The share of the gap between two scripts' baselines that a cosine across
# them is raised by. The gap is measured on a few passages of each script,
# and all of it let an unrelated question in one language through to a note
# in another ("lattice quantum chromodynamics" to a Chinese note on a
# database migration, by 0.004 over the bar); with 0.7 of it the English,
# Chinese and Russian questions asked of other languages' notes in
# bench.multilingual get their note 42 times of 130 instead of 21, and no
# unrelated query in another language than the notes' gets more answers.
CROSS_SCRIPT_SHARE: Final = 0.7


@dataclass(frozen=True, slots=True)
class Baseline:
    """A query's cosine with text about nothing in particular (`overall`: its
    `NULL_TOP` nearest passages), and with the passages of each script alone
    (`by_script`), the query being written in `query_script`.

    The model puts a text near others of its own language, so an English
    question comes closer to every English text than to any Chinese one,
    the note that answers it included: "In which month does Tuanzi get
    vaccinated each year?" has a cosine of 0.763 with the chunk holding
    疫苗：猫三联和狂犬都是每年 9 月打, below its baseline of 0.777, and of
    the English questions asked of the Chinese and Russian notes of
    bench.multilingual fewer than one in seven got an answer holding their
    note. How far a query stands from a script is measured on the passages:
    its baseline among its own script's passages less that among the
    note's (0.030 for that question and Chinese), and a cosine across
    scripts is read as `CROSS_SCRIPT_SHARE` of that higher (`gap`).
    """

    overall: float
    by_script: Mapping[str, float]
    query_script: str | None = None

    def gap(self, text: str) -> float:
        """What a cosine with *text* is raised by: `CROSS_SCRIPT_SHARE` of how
        much closer the query comes to text about nothing in its own script
        than in *text*'s; 0 when they share a script or either is unknown.

        A text in several scripts (a note kept in Chinese and English at
        once) is raised by the gaps of its other scripts, each in the share
        of the other-script words it carries, and all of that only in the
        part its lines in the query's own script leave to make up
        (`still_apart`).
        """
        mine = self.query_script
        own = self.by_script.get(mine) if mine else None
        if mine is None or own is None:
            return 0.0
        shares = script_shares(text)
        other = {
            script: share
            for script, share in shares.items()
            if script != mine and script in self.by_script
        }
        if not other:
            return 0.0
        gap = sum(share * (own - self.by_script[script]) for script, share in other.items())
        apart = still_apart(mine, shares.get(mine, 0.0))
        return CROSS_SCRIPT_SHARE * apart * gap / sum(other.values())


def still_apart(query_script: str, share: float) -> float:
    """How much of the distance between the query's script and another a
    text still keeps when *share* of its words are in the query's script: 1
    for none, 0 for a text all in it.

    The model does not place a text of two languages halfway between them.
    Asked in Chinese or Russian, a text with one line in eight in the
    query's language (a sixth of its words in Chinese, a ninth in Russian)
    comes within a sixth of where the same text all in it would, and with
    two lines it is there: for the unrelated queries of bench.multilingual,
    the mean margin over their baseline of eight random lines of that set's
    notes was −0.074 with none in Chinese, −0.010 with one and −0.003 with
    two, against 0.002 with all eight (−0.039, −0.010, −0.002 and −0.004 in
    Russian). So for those scripts what is left falls to nothing by 40 % of
    the words, as (1 − share / 0.4)⁴. Asked in English, a text comes closer
    about as fast as its English words grow: a Chinese text with one
    English line in eight (14 % of its words) keeps 0.72 of its distance,
    with four (46 %) 0.42, with six (67 %) 0.17, which (1 − share)^1.5
    follows. The whole gap raised a note of English and Chinese lines for
    any unrelated question: with bench.multilingual's Chinese and English
    notes merged line by line, 16 of its 16 unrelated Chinese queries got
    an answer, and 11 of 16 English ones.
    """
    if share <= 0.0:
        return 1.0
    if query_script == "latin":
        return math.pow(max(0.0, 1.0 - share), 1.5)
    return math.pow(max(0.0, 1.0 - share / 0.4), 4)


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
    "Last night's football match ended in a draw after extra time.",
    "The museum opened an exhibition of landscape paintings from the last century.",
    "How the immune system recognises and fights a virus.",
    "The planets of the solar system, from Mercury to Neptune.",
    "A summary of the plot of a classic novel about a family feud.",
    "Stock markets fell today as investors worried about interest rates.",
    "The city council voted on new rules for parking fines.",
    "Beginner lessons for learning to play the guitar.",
    "The animals and plants that live in a tropical rainforest.",
    "Why water expands when it freezes, explained with simple chemistry.",
    "A step-by-step tutorial on sorting a list in a programming language.",
    "Photos and speeches from a family wedding celebration.",
    "A travel guide to hiking trails in the mountains.",
    "An introduction to the ideas of ancient Greek philosophers.",
    "How to replace the brake pads on an old car.",
    "A geometry lesson on the angles of a triangle.",
    "一个古代王朝从兴盛到衰落的历史。",
    "这部电影的剧情有点拖沓，但演员演得不错。",
    "交响乐团昨晚的音乐会座无虚席。",
    "地铁新线路下个月开通，沿途有十二个站。",
    "春节贴春联、吃饺子的传统习俗。",
    "今年一线城市的房价走势分析。",
    "植物通过光合作用把阳光变成养分。",
    "昨天的篮球比赛打到了加时赛。",
    "沙漠地区白天炎热、夜晚寒冷的气候特点。",
    "手机电池怎样保养才能用得更久。",
    "唐诗里写月亮的名句赏析。",
    "咖啡是怎样从非洲传到世界各地的。",
    "小区开始实行垃圾分类的新规定。",
    "周末去超市买了水果和蔬菜。",
    "感冒了要多喝水、多休息。",
    "学英语最好每天坚持听和说。",
    "Выборы в городскую думу пройдут в сентябре.",
    "Реформа школьного образования вызвала споры среди учителей.",
    "Как сделать ремонт в ванной своими руками.",
    "Осенью в лесу много грибов, главное не собирать незнакомые.",
    "Рецепт малосольных огурцов на зиму.",
    "Русская литература девятнадцатого века: Толстой и Достоевский.",
    "Хоккейный матч закончился победой хозяев в овертайме.",
    "Цены на бензин снова выросли.",
    "Строительство нового моста через реку продлится три года.",
    "Симптомы простуды и как её лечить дома.",
    "Юрий Гагарин первым полетел в космос в 1961 году.",
    "Правила пожарной безопасности в жилом доме.",
    "Как выучить английский язык за год.",
    "Ипотека: как банки считают процентную ставку.",
    "В центре города открылась новая кофейня.",
    "Рейс задержали на два часа из-за тумана.",
)


def _by_script(passages: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    rows: dict[str, list[int]] = {}
    for row, passage in enumerate(passages):
        script = main_script(passage)
        if script is not None:
            rows.setdefault(script, []).append(row)
    return {script: tuple(found) for script, found in rows.items()}


# The rows of `REFERENCE_PASSAGES` in each script (German and Spanish count
# as Latin: what the model groups a text by is its script and words).
REFERENCE_SCRIPTS: Final[Mapping[str, tuple[int, ...]]] = _by_script(REFERENCE_PASSAGES)
