"""The page equations' cutting into formulas, so a narrow screen can wrap between them."""

import re

from hypothesis import given
from hypothesis import strategies as st

from app.words import equations
from app.words.equations import formulas

GAP = re.compile(r"\\q?quad(?![A-Za-z])")


def every_equation():
    for name, value in vars(equations).items():
        if name.startswith("_"):
            continue
        if name.isupper() and isinstance(value, str):
            yield name, value
        elif name.isupper() and isinstance(value, dict):
            for key, latex in value.items():
                if isinstance(latex, str):
                    yield f"{name}[{key}]", latex


def balanced(latex):
    """Braces, ``\\left``/``\\right`` and environments all close within ``latex``."""
    text = re.sub(r"\\[{}]", "", latex)  # escaped braces are characters
    if text.count("{") != text.count("}"):
        return False
    commands = re.findall(r"\\(left|right|begin|end)(?![A-Za-z])", text)
    return commands.count("left") == commands.count("right") and commands.count(
        "begin"
    ) == commands.count("end")


def test_every_formula_of_every_equation_is_whole():
    for name, latex in every_equation():
        parts = formulas(latex)
        assert parts, name
        assert all(balanced(part) for part in parts), name
        # Nothing is lost: the formulas hold the equation's text, less the gaps cut.
        ours = GAP.sub("", "".join(parts)).replace(" ", "")
        assert ours == GAP.sub("", latex).replace(" ", ""), name


def test_the_long_equations_wrap_between_their_formulas():
    assert len(formulas(equations.LINEAR_ATTENTION)) == 3
    assert len(formulas(equations.ENCODER["bert"])) == 3
    assert len(formulas(equations.SPARSE_PATTERNS)) == 3


def test_a_gap_inside_a_formula_stays():
    # In an environment, between \left and \right, in braces: all one formula.
    for latex in (
        r"\begin{gathered} a \qquad b \\ c \end{gathered}",
        r"\left( a \quad b \right)",
        r"\frac{a \quad b}{c}",
    ):
        assert formulas(latex) == [latex]


def test_a_label_stays_with_its_formula():
    parts = formulas(equations.BOOK_SA)
    assert len(parts) == 2
    assert parts[0].endswith(r"\text{(12.8)},")
    assert parts[1].endswith(r"\text{(12.9)}")


ATOM = st.sampled_from(
    [r"a = b,", r"\frac{x}{y}", r"\left( p \quad q \right)", r"\text{word}", r"\{ z \}"]
)


@given(st.lists(ATOM, min_size=1, max_size=6), st.lists(st.sampled_from([r"\quad", r"\qquad"])))
def test_formulas_joined_by_gaps_come_back_apart(atoms, gaps):
    latex = atoms[0]
    for atom, gap in zip(atoms[1:], gaps + [r"\qquad"] * len(atoms), strict=False):
        latex += f" {gap} {atom}"
    assert formulas(latex) == atoms


@given(
    st.sampled_from(["rows", "columns"]),
    st.integers(1, 4096),
    st.integers(1, 256),
    st.booleans(),
)
def test_a_heads_projections_are_whole_formulas_at_any_size(convention, d_model, d_head, biases):
    latex = equations.head_projections(convention, d_model, d_head, biases)
    parts = formulas(latex)
    assert len(parts) == 4  # Q, K, V and the sizes: each wraps on its own
    assert all(balanced(part) for part in parts)
    assert str(d_model) in parts[-1]
    assert ("b_Q" in latex or "beta_{q}" in latex) == biases
