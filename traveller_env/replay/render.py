"""Pictures of a battle: a text map (``render_ansi``), an RGB image (``render_rgb``) and an
animated GIF of several images (``write_gif``).

Glyphs: the combatants of side 0 are ``A``, ``B``, ``C``... and those of side 1 ``0``, ``1``,
``2``... (then lowercase letters, skipping the terrain letter ``c``), in scenario order within
the side, so ``blue_0`` is ``A`` and ``red_0`` is ``0``. On the text map every square takes two
characters: the terrain character and a space, or a glyph and its state mark (``' '``
standing, ``-`` crouched, ``_`` prone, ``x`` unconscious, ``+`` dead).

Pillow is needed only by ``render_rgb`` and ``write_gif``; it is imported when they are called.
``HumanWindow`` shows ``render_rgb``'s pictures live in a pygame window (the AEC env's
``render_mode="human"``); pygame (pygame-ce, the ``render`` extra) is imported when one opens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from traveller_env.rules.grid import COVER, DIFFICULT, OPEN, WALL
from traveller_env.rules.narrate import narrate_log

if TYPE_CHECKING:  # pragma: no cover
    from traveller_env.rules.battle import Battle
    from traveller_env.rules.combatant import Combatant

__all__ = [
    "DOWN_COLOUR",
    "GIF_PIXEL_BUDGET",
    "HIT_COLOUR",
    "MISS_COLOUR",
    "SIDE_COLOURS",
    "TERRAIN_COLOURS",
    "GifWriter",
    "HumanWindow",
    "auto_cell",
    "combatant_line",
    "gif_cell",
    "glyph",
    "render_ansi",
    "render_rgb",
    "state_mark",
    "write_gif",
]

_SIDE0_GLYPHS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SIDE1_GLYPHS = "0123456789abdefghijklmnopqrstuvwxyz"  # no 'c': it is the cover terrain char

#: RGB colour of each side's combatants (side 0 blue, side 1 red).
SIDE_COLOURS: tuple[tuple[int, int, int], ...] = ((40, 90, 220), (215, 45, 35))
#: RGB colour of each terrain character.
TERRAIN_COLOURS: dict[str, tuple[int, int, int]] = {
    OPEN: (226, 219, 198),
    DIFFICULT: (184, 158, 116),
    COVER: (126, 150, 100),
    WALL: (58, 58, 66),
}
DOWN_COLOUR = (140, 140, 140)
HIT_COLOUR = (235, 20, 20)
MISS_COLOUR = (105, 105, 105)
_OUTLINE = (25, 25, 30)
_CAPTION_BG = (30, 30, 36)
_CAPTION_FG = (235, 235, 235)

_ANSI_SIDE = ("\x1b[1;34m", "\x1b[1;31m")
_ANSI_DIM = "\x1b[2m"
_ANSI_RESET = "\x1b[0m"


# ---------------------------------------------------------------------------- shared helpers
def _side_index(battle: Battle, c: Combatant) -> int:
    """Position of ``c`` among the combatants of its side, in scenario order."""
    return sum(1 for o in battle.combatants if o.side == c.side and o.order < c.order)


def glyph(battle: Battle, c: Combatant) -> str:
    """The one-character map glyph of a combatant (see the module docstring)."""
    i = _side_index(battle, c)
    pool = _SIDE0_GLYPHS if c.side == 0 else _SIDE1_GLYPHS if c.side == 1 else ""
    return pool[i] if i < len(pool) else "?"


def state_mark(c: Combatant) -> str:
    """The mark after a glyph on the text map: stance, or ``x`` unconscious / ``+`` dead."""
    if c.down or c.out:
        return "+" if c.dead else "x"
    return {"stand": " ", "crouch": "-", "prone": "_"}.get(c.stance, "?")


def _state_word(c: Combatant) -> str:
    if c.down or c.out:
        word = "dead" if c.dead else "unconscious"
        return word if c.out else word + " (still in play)"
    return c.stance


def _chars_text(c: Combatant) -> str:
    return " ".join(f"{k} {c.chars[k]}/{c.max_chars.get(k, c.chars[k])}"
                    for k in ("STR", "DEX", "END"))


def _health(c: Combatant) -> float:
    """Current END+STR+DEX over their starting values, in [0, 1]."""
    keys = ("END", "STR", "DEX")
    top = sum(c.max_chars.get(k, c.chars[k]) for k in keys)
    return max(0.0, min(1.0, sum(c.chars[k] for k in keys) / top)) if top > 0 else 0.0


def _weapon_text(c: Combatant) -> str:
    w = c.weapon
    if w.is_melee:
        return w.name
    drawn = "" if c.drawn else ", holstered"
    return f"{w.name} ammo {c.ammo}/{w.magazine} +{c.spares} spare{drawn}"


def _status_line(battle: Battle) -> str:
    if battle.done:
        if battle.winner is not None:
            result = f"victory for {battle.winner}"
        elif battle.truncated:
            result = "stopped at max_rounds, no winner"
        else:
            result = "draw"
        return f"Round {battle.round} - battle over: {result}"
    d = battle.decision
    what = {"haste": "declares haste", "turn": "to act", "reaction": "to react"}.get(
        d.kind, d.kind) if d else ""
    return f"Round {battle.round} - {d.agent} {what}" if d else f"Round {battle.round}"


# ---------------------------------------------------------------------------- text
def combatant_line(battle: Battle, c: Combatant, id_width: int = 0, name_width: int = 0) -> str:
    """One legend line: glyph, id, name, side, square, stance or state, STR/DEX/END
    (current/start), weapon and ammunition, and the aim held if any."""
    side = battle.side_names[c.side] if c.side < len(battle.side_names) else str(c.side)
    aim = f", aiming at {c.aim_target} {c.aim_dm:+d}" if c.aim_target else ""
    return (f"{glyph(battle, c)}  {c.id:<{id_width}}  {c.name:<{name_width}}  ({side}) at "
            f"({c.pos[0]}, {c.pos[1]})  {_state_word(c)}  {_chars_text(c)}  "
            f"{_weapon_text(c)}{aim}")


def render_ansi(battle: Battle, last_events: int = 8, color: bool = False) -> str:
    """A text picture of the battle: a status line, the map (two characters per square, x and
    y rulers), a legend with every combatant's glyph, id, name, position, stance or state,
    STR/DEX/END (current/start), weapon and ammunition, then the last ``last_events`` events
    narrated. ``color`` adds ANSI colour codes (blue side 0, red side 1, dim when down)."""
    grid = battle.grid
    cells = [[ch + " " for ch in row] for row in grid.rows]
    for c in battle.combatants:
        x, y = c.pos
        text = glyph(battle, c) + state_mark(c)
        if color:
            style = _ANSI_DIM if (c.down or c.out) else _ANSI_SIDE[c.side % 2]
            text = style + text + _ANSI_RESET
        cells[y][x] = text
    ywidth = len(str(grid.height - 1))
    pad = " " * (ywidth + 1)
    ruler = [" "] * (2 * grid.width)
    for x in range(0, grid.width, 5):
        label = str(x)
        if 2 * x + len(label) <= len(ruler):
            ruler[2 * x:2 * x + len(label)] = label
    lines = [_status_line(battle), pad + "".join(ruler).rstrip()]
    for y, row in enumerate(cells):
        lines.append(f"{y:>{ywidth}} " + "".join(row).rstrip())
    lines.append("")
    lines.append("Legend: terrain '.' open, '~' difficult, 'c' low cover, '#' wall; after a glyph "
                 "' ' standing, '-' crouched, '_' prone, 'x' unconscious, '+' dead")
    width = max(len(c.id) for c in battle.combatants)
    nwidth = max(len(c.name) for c in battle.combatants)
    lines += ["  " + combatant_line(battle, c, width, nwidth) for c in battle.combatants]
    if last_events > 0 and battle.events:
        lines.append("")
        lines.append("Last events:")
        lines += ["  " + t for t in narrate_log(battle.events[-last_events:])]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- images
def auto_cell(width: int, height: int) -> int:
    """Pixels per square for a ``width`` x ``height`` map: at most 32, small enough that the
    image stays within about 1600 x 1000 pixels (a 240 x 5 map gets 6), and at least 2."""
    return max(2, min(32, 1600 // max(1, width), 1000 // max(1, height)))


#: Most pixels in one frame of a streamed GIF (``gif_cell``): 4 million, a 2000 x 2000 frame
#: (12 MB as RGB while it is drawn; a 1000 x 1000 map at 2 pixels per square).
GIF_PIXEL_BUDGET = 4_000_000


def gif_cell(width: int, height: int, cell: int | None = None,
             budget: int = GIF_PIXEL_BUDGET) -> int:
    """Pixels per square of a GIF frame of a ``width`` x ``height`` map: ``cell`` (or
    ``auto_cell``), scaled down so that the frame stays within ``budget`` pixels (at least 2,
    ``render_rgb``'s smallest). ``ValueError`` when even 2 pixels per square is over it."""
    want = auto_cell(width, height) if cell is None else max(2, int(cell))
    fits = int((budget / max(1, width * height)) ** 0.5)
    if fits < 2:
        raise ValueError(f"a {width}x{height} map needs {4 * width * height:,} pixels per frame "
                         f"at 2 pixels per square, over the {budget:,} a GIF frame may have; "
                         "write an HTML replay instead (--html PATH), which has no such limit")
    return min(want, fits)


class GifWriter:
    """An animated GIF written frame by frame, so that memory holds one frame at a time
    (``write_gif`` needs every frame at once). The palette comes from the first frame and
    the known colours; each later frame is written as the rectangle that changed.

    ``with GifWriter(path, fps=4) as gif: gif.add(render_rgb(battle))``."""

    def __init__(self, path: str | PathLike[str], fps: float = 4) -> None:
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self.path, self.frames = Path(path), 0
        self._duration = max(20, round(1000 / fps))
        self._palette: Any = None
        self._previous: np.ndarray | None = None
        self._fh: Any = None

    def __enter__(self) -> GifWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, frame: np.ndarray) -> None:
        """Quantize ``frame`` (an RGB ``uint8`` array of the first frame's shape) and write it."""
        from PIL import GifImagePlugin, Image

        rgb = Image.fromarray(np.asarray(frame, dtype=np.uint8), "RGB")
        if self._palette is None:
            self._palette = _palette_of([rgb])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("wb")
        elif frame.shape[:2] != self._previous.shape:  # type: ignore[union-attr]
            raise ValueError(f"all frames must have the shape of the first, "
                             f"{self._previous.shape}")  # type: ignore[union-attr]
        im = rgb.quantize(palette=self._palette, dither=Image.Dither.NONE)
        index = np.asarray(im)
        offset = (0, 0)
        if self._previous is None:
            head, _ = GifImagePlugin.getheader(im, info={"loop": 0})
            self._fh.write(b"".join(head))
        else:
            rows, cols = np.nonzero(index != self._previous)
            if len(rows):  # only the changed rectangle (the rest stays on screen)
                y0, y1, x0, x1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
            else:
                y0, y1, x0, x1 = 0, 1, 0, 1
            im, offset = im.crop((int(x0), int(y0), int(x1), int(y1))), (int(x0), int(y0))
        self._fh.write(b"".join(GifImagePlugin.getdata(im, offset, duration=self._duration,
                                                       disposal=1)))
        self._previous = index
        self.frames += 1

    def close(self) -> None:
        """End the file (a GIF with no frame is not written)."""
        if self._fh is not None and not self._fh.closed:
            self._fh.write(b";")
            self._fh.close()


def _palette_of(images: Sequence[Any]) -> Any:
    """One 256-colour palette for ``images`` (PIL RGB images of one size) and the known
    colours, so colours do not flicker between frames."""
    from PIL import Image

    swatch = np.array([[*SIDE_COLOURS, *TERRAIN_COLOURS.values(), DOWN_COLOUR, HIT_COLOUR,
                        MISS_COLOUR, _OUTLINE, _CAPTION_BG, _CAPTION_FG, (255, 255, 255)]],
                      dtype=np.uint8).repeat(8, axis=0).repeat(8, axis=1)
    w, h = images[0].size
    sample = Image.new("RGB", (max(w, swatch.shape[1]), h * len(images) + swatch.shape[0]))
    for k, image in enumerate(images):
        sample.paste(image, (0, k * h))
    sample.paste(Image.fromarray(swatch), (0, h * len(images)))
    return sample.quantize(256, method=Image.Quantize.MEDIANCUT)


@lru_cache(maxsize=32)
def _font(size: int) -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: fixed-size bitmap font
        return ImageFont.load_default()


def _terrain_image(battle: Battle, cell: int) -> np.ndarray:
    """The terrain layer as an (H*cell, W*cell, 3) array, with light texture and grid lines
    (cached: a battle's map never changes). Treat the result as read-only."""
    return _terrain_layer(tuple(battle.grid.rows), cell)


@lru_cache(maxsize=16)
def _terrain_layer(rows: tuple[str, ...], cell: int) -> np.ndarray:
    codes = {ch: i for i, ch in enumerate(TERRAIN_COLOURS)}
    palette = np.array(list(TERRAIN_COLOURS.values()), dtype=np.uint8)
    idx = np.array([[codes.get(ch, 0) for ch in row] for row in rows], dtype=np.intp)
    img = palette[idx].repeat(cell, axis=0).repeat(cell, axis=1)
    if cell >= 6:
        yy, xx = np.mgrid[0:img.shape[0], 0:img.shape[1]]
        sub_y, sub_x = yy % cell, xx % cell
        big = idx.repeat(cell, axis=0).repeat(cell, axis=1)
        step = max(3, cell // 5)
        # Difficult ground: scattered dots. Low cover: a darker rim (a low wall).
        dots = (big == codes[DIFFICULT]) & (sub_x % step == step // 2) & (
            (sub_y + (xx // step) % 2 * (step // 2)) % step == step // 2)
        img[dots] = (142, 116, 78)
        rim = max(1, cell // 8)
        edge = (sub_x < rim) | (sub_y < rim) | (sub_x >= cell - rim) | (sub_y >= cell - rim)
        img[(big == codes[COVER]) & edge] = (88, 110, 66)
        if cell >= 10:
            lines = (sub_x == 0) | (sub_y == 0)
            openish = (big == codes[OPEN]) | (big == codes[DIFFICULT])
            img[lines & openish] = (img[lines & openish] * 0.9).astype(np.uint8)
    img = np.ascontiguousarray(img)
    img.setflags(write=False)
    return img


def _centre(pos: Sequence[int], cell: int, top: int) -> tuple[float, float]:
    return pos[0] * cell + cell / 2, top + pos[1] * cell + cell / 2


def _radius(cell: int) -> float:
    """Radius of a standing combatant's circle; never under 4 px so small maps stay legible."""
    return max(4.0, cell * 0.38)


def _arrow_head(draw: Any, frm: tuple[float, float], to: tuple[float, float],
                colour: tuple[int, int, int], size: float, back: float) -> None:
    """A filled triangle pointing at ``to``, its tip ``back`` pixels short of it."""
    dx, dy = to[0] - frm[0], to[1] - frm[1]
    length = (dx * dx + dy * dy) ** 0.5
    if length <= back + size:
        return
    ux, uy = dx / length, dy / length
    tip = (to[0] - ux * back, to[1] - uy * back)
    base = (tip[0] - ux * size, tip[1] - uy * size)
    half = size * 0.55
    draw.polygon([tip, (base[0] - uy * half, base[1] + ux * half),
                  (base[0] + uy * half, base[1] - ux * half)], fill=colour)


def _draw_combatant(draw: Any, battle: Battle, c: Combatant, cell: int, top: int) -> None:
    """One combatant: a circle of its side's colour (crouched smaller, prone flattened, grey
    with a cross when down), its glyph when squares are large, and a wound bar above it."""
    cx, cy = _centre(c.pos, cell, top)
    r = _radius(cell)
    bar_h = max(2, round(r / 4))
    if cell >= 12:
        cy += bar_h / 2 + 1  # leave room for the wound bar inside the square
    down = c.down or c.out
    fill = DOWN_COLOUR if down else SIDE_COLOURS[c.side % len(SIDE_COLOURS)]
    rx = ry = r
    if down or c.stance == "prone":
        ry = max(2.0, r * 0.62)
        cy += r - ry
    elif c.stance == "crouch":
        rx = ry = max(3.0, r * 0.84)
        cy += r - ry
    outline = _OUTLINE if cell >= 8 else None
    draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=fill, outline=outline)
    if down:
        d, w = rx * 0.55, max(1, cell // 14)
        k = ry / rx
        draw.line((cx - d, cy - d * k, cx + d, cy + d * k), fill=_OUTLINE, width=w)
        draw.line((cx - d, cy + d * k, cx + d, cy - d * k), fill=_OUTLINE, width=w)
    elif cell >= 16:
        draw.text((cx, cy), glyph(battle, c), fill=(255, 255, 255),
                  font=_font(max(9, round(r * 1.25))), anchor="mm")
    # Wound bar: current END+STR+DEX over the starting values.
    bx0, bx1 = cx - r, cx + r
    by1 = cy - ry - 2
    by0 = by1 - bar_h
    draw.rectangle((bx0, by0, bx1, by1), fill=(40, 40, 40))
    frac = _health(c)
    if frac > 0:
        colour = (60, 185, 60) if frac > 0.6 else (230, 185, 40) if frac > 0.3 else (
            225, 70, 40)
        draw.rectangle((bx0, by0, bx0 + max(1.0, (bx1 - bx0) * frac), by1), fill=colour)


def render_rgb(battle: Battle, attacks: Sequence[Mapping[str, Any]] | None = None,
               cell: int | None = None, caption: str | None = None) -> np.ndarray:
    """An RGB picture of the battle as a ``uint8`` array of shape (H, W, 3).

    The map is drawn at ``cell`` pixels per square (``auto_cell`` when ``None``): terrain
    colours from ``TERRAIN_COLOURS``, combatants as circles of their side's colour (a flattened
    ellipse when prone, a smaller circle when crouched, grey with a cross when down), each with
    a bar over it showing current END+STR+DEX over the starting values, and the glyph written in
    it when squares are large enough. ``attacks`` (attack events) are drawn as lines from
    attacker to target, red for a hit and grey for a miss; an event may carry ``actor_pos`` and
    ``target_pos`` (squares), else the combatants' current squares are used. ``H`` is
    ``height * cell`` plus, when ``caption`` is given, a caption strip at the top; ``W`` is
    ``width * cell``.
    """
    from PIL import Image, ImageDraw

    grid = battle.grid
    cell = auto_cell(grid.width, grid.height) if cell is None else max(2, int(cell))
    terrain = _terrain_image(battle, cell)
    cap_h = max(12, min(22, cell)) if caption is not None else 0
    img = Image.new("RGB", (terrain.shape[1], terrain.shape[0] + cap_h), _CAPTION_BG)
    img.paste(Image.fromarray(terrain), (0, cap_h))
    draw = ImageDraw.Draw(img)
    if caption:
        font = _font(cap_h - 4)
        draw.text((4, cap_h / 2), caption, fill=_CAPTION_FG, font=font, anchor="lm")

    # Attack lines first, so that the combatants (and their glyphs) stay readable on top.
    line_w = max(1, cell // 10)
    hits: list[tuple[float, float]] = []
    for a in attacks or ():
        att, tgt = battle.by_id.get(a.get("actor")), battle.by_id.get(a.get("target"))
        p0 = a.get("actor_pos") or (att.pos if att is not None else None)
        p1 = a.get("target_pos") or (tgt.pos if tgt is not None else None)
        if p0 is None or p1 is None:
            continue
        colour = HIT_COLOUR if a.get("hit") else MISS_COLOUR
        (ax, ay), (tx, ty) = _centre(p0, cell, cap_h), _centre(p1, cell, cap_h)
        draw.line((ax, ay, tx, ty), fill=colour, width=line_w)
        dot = line_w + 1.5  # where the shot came from
        draw.ellipse((ax - dot, ay - dot, ax + dot, ay + dot), fill=colour)
        _arrow_head(draw, (ax, ay), (tx, ty), colour, size=max(3.0, cell * 0.3),
                    back=_radius(cell))
        if a.get("hit"):
            hits.append((tx, ty))

    for c in battle.combatants:
        _draw_combatant(draw, battle, c, cell, cap_h)

    for tx, ty in hits:  # a ring around each target hit
        rr = max(5.0, cell * 0.5)
        draw.ellipse((tx - rr, ty - rr, tx + rr, ty + rr), outline=HIT_COLOUR, width=line_w + 1)
        rr -= line_w + 1
        draw.ellipse((tx - rr, ty - rr, tx + rr, ty + rr), outline=(255, 255, 255), width=1)
    return np.asarray(img, dtype=np.uint8).copy()


def write_gif(frames: Sequence[np.ndarray], path: str | PathLike[str], fps: float = 4) -> None:
    """Write ``frames`` (RGB ``uint8`` arrays of one shape) as an animated GIF that loops,
    ``fps`` frames per second. Raises ``ValueError`` on no frames or frames of other shapes."""
    from PIL import Image

    if not frames:
        raise ValueError("write_gif needs at least one frame")
    shape = frames[0].shape
    if any(f.shape != shape for f in frames):
        raise ValueError(f"all frames must have the shape of the first, {shape}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    images = [Image.fromarray(np.asarray(f, dtype=np.uint8), "RGB") for f in frames]
    # One palette for every frame, from a sample of frames plus the known colours: much faster
    # than quantizing each frame by itself, and colours do not flicker between frames.
    picks = sorted({round(i * (len(images) - 1) / 7) for i in range(8)})
    palette = _palette_of([images[i] for i in picks])
    paletted = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    paletted[0].save(path, format="GIF", save_all=True, append_images=paletted[1:],
                     duration=max(20, round(1000 / fps)), loop=0)


class HumanWindow:
    """A pygame window that shows RGB frames (``render_rgb``'s arrays) as they come: the AEC
    env's ``render_mode="human"``. It opens at the first frame, follows the frame's size, keeps
    the window responsive (events pumped) and paces frames at ``fps`` per second (``0``: no
    pacing; never under SDL's ``dummy`` video driver, where nobody watches). ``ImportError``
    naming the extra when pygame is not installed."""

    def __init__(self, caption: str = "Traveller Tactics", fps: float = 4) -> None:
        try:
            import pygame
        except ImportError:
            raise ImportError("render_mode='human' needs pygame (pygame-ce): pip install "
                              "'traveller-tactics[render]' (or pygame-ce)") from None
        import os

        self._pg = pygame
        self.caption = caption
        self.fps = fps
        self._paced = os.environ.get("SDL_VIDEODRIVER") != "dummy"
        self._screen: Any = None
        self._clock: Any = None

    @property
    def is_open(self) -> bool:
        """Whether the window is showing (from the first frame until ``close``)."""
        return self._screen is not None

    def show(self, frame: np.ndarray) -> None:
        """Blit ``frame`` (``uint8`` (H, W, 3)) into the window and update the display."""
        pg = self._pg
        height, width = frame.shape[:2]
        if self._screen is None:
            pg.display.init()
            pg.display.set_caption(self.caption)
            self._clock = pg.time.Clock()
        if self._screen is None or self._screen.get_size() != (width, height):
            self._screen = pg.display.set_mode((width, height))
        surface = pg.surfarray.make_surface(np.ascontiguousarray(frame.swapaxes(0, 1)))
        self._screen.blit(surface, (0, 0))
        self.show_again()

    def show_again(self) -> None:
        """Show the window's frame once more (events pumped, display updated, paced)."""
        pg = self._pg
        pg.event.pump()
        pg.display.flip()
        if self._paced and self.fps:
            self._clock.tick(self.fps)

    def close(self) -> None:
        """Close the window (nothing when it never opened); a later frame opens a new one."""
        if self._screen is not None:
            self._pg.display.quit()
            self._screen = None
            self._clock = None
