"""One colour and one marker per encoding, the same in every figure.

Single encodings get fixed entries; a composite takes its relative part's
colour with a dashed line, a RoPE extension its encoding's colour with a line
style of its own (dotted PI, dashed NTK, dash-dot YaRN) and a hollow marker; anything else (a label of a sweep, a task) gets a
colour from a fixed cycle by its position in the list it is drawn from.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_TAB = plt.get_cmap("tab20").colors
ENCODING = {  # name: (colour, marker)
    "none": ("#000000", "o"), "sinusoidal": (_TAB[0], "s"), "learned": (_TAB[2], "^"),
    "rope": (_TAB[6], "D"), "alibi": (_TAB[4], "v"), "t5": (_TAB[8], "P"), "xl": (_TAB[10], "X"),
    "shaw": (_TAB[12], "*"), "kerple": (_TAB[14], "<"), "sandwich": (_TAB[16], ">"), "dpb": (_TAB[18], "h"),
    "xpos": (_TAB[7], "d"), "fire": (_TAB[1], "p"), "cope": (_TAB[5], "H"),
}
EXTENSION = {"pi": ":", "ntk": "--", "yarn": "-."}   # line style of a RoPE extension
CYCLE = [_TAB[i] for i in (0, 6, 4, 2, 8, 10, 12, 14, 16, 18, 1, 7, 5, 3)]
MARKERS = "osD^vP*X<>hdpH"


def extension_of(label):
    """'rope (ntk)' -> 'ntk'; a label without parentheses -> None."""
    return label[label.find("(") + 1:label.find(")")] if "(" in label else None


def encoding_style(name, index=0):
    """kwargs for plot(): colour, marker, line style of an encoding (or a label
    whose first word is one, as 'rope (pi)')."""
    base = name.split(" ")[0]
    parts = base.split("+")
    key = parts[-1]
    if key in ENCODING:
        colour, marker = ENCODING[key]
        if "(" in name:   # a RoPE extension 'rope (ntk)': its own line style, a hollow marker
            return {"color": colour, "marker": marker, "markerfacecolor": "white",
                    "linestyle": EXTENSION.get(extension_of(name), "--")}
        return {"color": colour, "marker": marker, "linestyle": "--" if len(parts) > 1 else "-"}
    return {"color": CYCLE[index % len(CYCLE)], "marker": MARKERS[index % len(MARKERS)], "linestyle": "-"}


def save(fig, stem):
    """stem.png and stem.svg; returns the paths."""
    fig.tight_layout()
    paths = [f"{stem}.png", f"{stem}.svg"]
    fig.savefig(paths[0], dpi=120)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths
