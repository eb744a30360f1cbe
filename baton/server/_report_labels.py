"""Where `baton report` writes each compaction's `before → after` label, so that no two
labels overlap (README.md, "Token report").

A label is one line of text beside its marker. Labels go in a few rows at the top of their
lane; each takes the first row in which it clears the label before it, so close markers get
different rows. Where more markers crowd together than the rows can hold, neighbours share
one label (`26,517 → 15,340 (+2 more)`, the others' figures in their markers' tooltips).
The text's width is estimated from its length, generously, since the page has no script to
measure it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROWS = 3
ROW_HEIGHT = 14  # pixels per row: the 11px label font's line box (13.4 px in Chromium)
CHAR_WIDTH = 6.8  # pixels per character of the 11px font, a little over its widest digits
GAP = 6  # pixels kept clear between two labels of a row
OFFSET = 3  # pixels between a marker and its label


@dataclass(frozen=True, slots=True)
class Label:
    """One placed label: its text's box is `left`..`right` on row `row`."""

    text: str
    x: float  # where the text is anchored
    anchor: str  # "start" | "end"
    left: float
    right: float
    row: int


def width(text: str) -> float:
    """The estimated width of `text` in the label font."""
    return len(text) * CHAR_WIDTH


def place(marks: Sequence[tuple[float, str]], low: float, high: float) -> list[Label | None]:
    """A label for each (marker x, text) of `marks`, or None when none of the `ROWS` rows has
    room for it; a label stays between `low` and `high` (it goes left of a marker near the
    right edge). Each row is filled first-fit in the order of the labels' left edges, so two
    labels of one row never overlap."""
    spans: list[tuple[float, int, Label]] = []
    for index, (x, text) in enumerate(marks):
        size = width(text)
        if x + OFFSET + size <= high:
            left, anchor, at = x + OFFSET, "start", x + OFFSET
        else:
            left, anchor, at = max(x - OFFSET - size, low), "end", x - OFFSET
        spans.append((left, index, Label(text, at, anchor, left, left + size, 0)))
    ends = [float("-inf")] * ROWS
    placed: list[Label | None] = [None] * len(marks)
    for left, index, label in sorted(spans, key=lambda span: (span[0], span[1])):
        row = next((row for row in range(ROWS) if ends[row] + GAP <= left), None)
        if row is None:
            continue
        ends[row] = label.right
        placed[index] = Label(label.text, label.x, label.anchor, label.left, label.right, row)
    return placed


def layout(marks: Sequence[tuple[float, str]], low: float, high: float) -> list[Label | None]:
    """`place`, merging a label that fits no row into its neighbour's until every one fits:
    each marker's label, or None for a marker another's label counts (`(+N more)`).
    `marks` are in x order, as a lane's compactions are."""
    groups = [[index] for index in range(len(marks))]  # labelled at their first marker
    while True:
        texts = [
            marks[group[0]][1] + (f" (+{len(group) - 1} more)" if len(group) > 1 else "")
            for group in groups
        ]
        placed = place(
            [(marks[group[0]][0], text) for group, text in zip(groups, texts, strict=True)],
            low,
            high,
        )
        left_out = next((index for index, label in enumerate(placed) if label is None), None)
        if left_out is None or len(groups) == 1:
            break
        # Into the group before it (the first group: the one after), as one label.
        first = max(left_out - 1, 0)
        groups[first : first + 2] = [groups[first] + groups[first + 1]]
    labels: list[Label | None] = [None] * len(marks)
    for group, label in zip(groups, placed, strict=True):
        labels[group[0]] = label
    return labels
