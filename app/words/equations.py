"""The equations the pages render beside their figures (``st.latex``), in both conventions.

Rows: the papers' convention (Vaswani et al. 2017), tokens are the rows of X (n × d).
Columns: the book's convention (UDL eqs. 12.6–12.9), inputs are the columns of X (D × N),
with Ω = Wᵀ and Q, K, V transposed.
"""

import re

PROJECTIONS = {
    "rows": r"Q = X W_Q,\quad K = X W_K,\quad V = X W_V \qquad X \in \mathbb{R}^{n \times d}",
    "columns": r"\mathbf{Q} = \boldsymbol\Omega_q \mathbf{X},\quad \mathbf{K} = \boldsymbol\Omega_k"
    r" \mathbf{X},\quad \mathbf{V} = \boldsymbol\Omega_v \mathbf{X} \qquad \mathbf{X} \in"
    r" \mathbb{R}^{D \times N},\ \boldsymbol\Omega = W^\top \quad\text{(book eq. 12.6, }"
    r"\boldsymbol\beta = 0\text{)}",
}


def head_projections(convention, d_model, d_head, biases):
    """One head of a trained layer: its slice of the projections, at the model's sizes.

    ``biases``: whether the layer adds them (BERT's family does, Llama's does not).
    """
    if convention == "columns":
        terms = [
            rf"\mathbf{{{x}}}_h = \boldsymbol\Omega_{{{p}}}^{{(h)}} \mathbf{{X}}"
            + (rf" + \boldsymbol\beta_{{{p}}}^{{(h)}}" if biases else "")
            for x, p in (("Q", "q"), ("K", "k"), ("V", "v"))
        ]
        return (
            r",\quad ".join(terms)
            + rf" \qquad \mathbf{{X}} \in \mathbb{{R}}^{{{d_model} \times N}},\ "
            rf"\boldsymbol\Omega^{{(h)}} \in \mathbb{{R}}^{{{d_head} \times {d_model}}}"
        )
    terms = [rf"{x}_h = X W_{x}^{{(h)}}" + (rf" + b_{x}^{{(h)}}" if biases else "") for x in "QKV"]
    return (
        r",\quad ".join(terms) + rf" \qquad X \in \mathbb{{R}}^{{n \times {d_model}}},\ "
        rf"W^{{(h)}} \in \mathbb{{R}}^{{{d_model} \times {d_head}}}"
    )


WEIGHT_NAMES = {
    "rows": ("W_Q", "W_K", "W_V"),
    "columns": ("Ω_q = W_Qᵀ", "Ω_k = W_Kᵀ", "Ω_v = W_Vᵀ"),
}

ATTENTION = (
    r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(s \cdot Q K^\top\right)"
    r" V, \qquad s = \tfrac{1}{\sqrt{d_k}}\ \text{by default (Vaswani et al. 2017, eq. 1)}"
)
#: Stacked, so that it fits half a page at 1024 px, presentation mode's large type included.
SOFTMAX = (
    r"\begin{gathered}"
    r"a_{ij} = \frac{e^{s\,q_i \cdot k_j - m_i}}{\sum_{j'} e^{s\,q_i \cdot k_{j'} - m_i}},"
    r" \\ m_i = \max_j s\, q_i \cdot k_j \\"
    r"\text{(subtracting } m_i \text{ keeps exp finite)}"
    r"\end{gathered}"
)
SATURATION = (
    r"H_i = -\sum_j a_{ij}\log_2 a_{ij},\qquad n_{\text{eff},i} = 2^{H_i},"
    r"\qquad \bar n_\text{eff} = \tfrac{1}{n}\sum_i 2^{H_i} \ge 2^{\bar H},"
    r"\qquad \lVert J_i \rVert_F = \lVert \operatorname{diag}(a_i) - a_i a_i^\top \rVert_F"
)
CAUSAL = (
    r"\operatorname{softmax}\!\left(s\,QK^\top + M\right),\qquad M_{ij} ="
    r" \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}"
)
SINUSOIDAL = (
    r"PE_{p,\,2i} = \sin\!\left(p / 10000^{2i/d}\right),\qquad PE_{p,\,2i+1} ="
    r" \cos\!\left(p / 10000^{2i/d}\right) \quad\text{(Vaswani et al. 2017, §3.5)}"
)
ROTARY = (
    r"\begin{pmatrix} q_{2i} \\ q_{2i+1} \end{pmatrix} \mapsto \begin{pmatrix} \cos p\theta_i"
    r" & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix} \begin{pmatrix}"
    r" q_{2i} \\ q_{2i+1} \end{pmatrix},\quad \theta_i = 10000^{-2i/d},\ i = 0, \dots,"
    r" \tfrac{d}{2} - 1\quad\text{(RoFormer, §3.2, eq. 15)}"
)
PERMUTATION = (
    r"\operatorname{Sa}[PX] = P\,\operatorname{Sa}[X]"
    r"\ \text{ for every permutation } P \text{ (no positions)}"
)
MULTI_HEAD = (
    r"\operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_0, \dots,"
    r" \text{head}_{h-1})\, W_O,\quad \text{head}_i = \operatorname{Attention}(X W_Q^{(i)},"
    r" X W_K^{(i)}, X W_V^{(i)})"
)
BOOK_SA = (
    r"\mathbf{Sa}[\mathbf{X}] = \mathbf{V}\cdot\mathbf{Softmax}\!\left[\mathbf{K}^T\mathbf{Q}"
    r"\right]\quad\text{(12.8)},\qquad \mathbf{Sa}[\mathbf{X}] = \mathbf{V}\cdot"
    r"\mathbf{Softmax}\!\left[\frac{\mathbf{K}^T\mathbf{Q}}{\sqrt{D_q}}\right]\quad\text{(12.9)}"
)
ENCODER = {
    "post": r"h = \operatorname{LN}\big(x + \operatorname{MHA}(x)\big),\qquad y ="
    r" \operatorname{LN}\big(h + \operatorname{FFN}(h)\big),\qquad \operatorname{FFN}(h) ="
    r" \max(0, hW_1 + b_1)W_2 + b_2",
    "pre": r"h = x + \operatorname{MHA}\big(\operatorname{LN}(x)\big),\qquad y = h +"
    r" \operatorname{FFN}\big(\operatorname{LN}(h)\big)",
    "bert": r"h = \operatorname{LN}_1\big(x + \operatorname{MHA}(x)\big),\qquad y ="
    r" \operatorname{LN}_2\big(h + \operatorname{FFN}(h)\big),\qquad \operatorname{FFN}(h) ="
    r" \operatorname{GELU}(hW_1 + b_1)W_2 + b_2 \quad\text{(BERT, post-LN)}",
    "llama": r"h = x + \operatorname{MHA}\big(\operatorname{RMSNorm}_1(x)\big),\qquad y = h +"
    r" \operatorname{FFN}\big(\operatorname{RMSNorm}_2(h)\big),\qquad \operatorname{FFN}(h) ="
    r" \big(\operatorname{SiLU}(hW_g) \odot hW_1\big)W_2 \quad\text{(Llama, pre-norm, SwiGLU)}",
}
LINEAR_ATTENTION = (
    r"V'_i = \frac{\sum_j \operatorname{sim}(q_i, k_j)\, v_j}{\sum_j \operatorname{sim}(q_i, k_j)},"
    r"\quad \operatorname{sim} = e^{s\, q\cdot k}\ \text{(softmax)}\ \text{or}\ \phi(q)\cdot\phi(k)"
    r" \ \Rightarrow\ V'_i = \frac{\phi(q_i)^\top \big(\sum_j \phi(k_j) v_j^\top\big)}"
    r"{\phi(q_i)^\top \sum_j \phi(k_j)},\quad \phi(x) = \operatorname{elu}(x) + 1"
)
SPARSE_PATTERNS = (
    r"\text{window: } |i - j| \le w,\qquad \text{strided: } |i - j| \le l \ \lor\ "
    r"(i - j) \bmod l = 0,\qquad \text{fixed: } \lfloor i/l \rfloor = \lfloor j/l \rfloor"
    r" \ \lor\ j \bmod l = l - 1"
)
PATCH_EMBEDDING = (
    r"z_0 = [\,x_p^1 E;\ x_p^2 E;\ \dots;\ x_p^N E\,] + E_{pos},\quad E \in"
    r" \mathbb{R}^{(P^2 C) \times D},\quad N = HW/P^2"
)
DECODER_SELF_ATTENTION = (
    r"\operatorname{MaskedSelfAttention}(Y) = \operatorname{softmax}\!\left("
    r"\frac{(YW_Q)(YW_K)^\top}{\sqrt{d_k}} + M\right) Y W_V,\qquad M_{ij} = \begin{cases}"
    r" 0 & j \le i \\ -\infty & j > i \end{cases}"
)
CROSS_ATTENTION = (
    r"\operatorname{CrossAttention}(Y, H) = \operatorname{softmax}\!\left("
    r"\frac{(YW_Q)(HW_K)^\top}{\sqrt{d_k}}\right) H W_V"
)
GREEDY_DECODING = (
    r"y_{t} = \arg\max_{w}\, p(w \mid y_{<t}, x),\qquad y_0 = \langle s \rangle,"
    r"\quad \text{stop at } \langle /s \rangle \quad\text{(greedy decoding)}"
)

#: A command's name after its backslash: letters, or one other character (``\\``, ``\{``).
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
#: How a piece that labels the formula before it starts: "(12.8)", "(Vaswani et al. 2017)".
_LABEL = r"\text{("


def formulas(latex):
    r"""The formulas of a displayed equation, to wrap between on a narrow screen.

    ``latex`` is cut at its top-level ``\quad`` and ``\qquad``, the gaps between formulas.

    A gap inside braces, ``\left … \right`` or an environment is part of a formula and
    stays, and so does one before a label (a citation or an equation number in
    parentheses). Each formula keeps what precedes its gap (a trailing comma included);
    the other gaps go, and the page puts space between the formulas instead.

    Parameters
    ----------
    latex : str

    Returns
    -------
    list of str, at least one
    """
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(latex):
        if latex[i] == "\\":
            name = _COMMAND.match(latex, i).group(1)
            if name in ("left", "begin"):
                depth += 1
            elif name in ("right", "end"):
                depth -= 1
            elif name in ("quad", "qquad") and depth == 0:
                pieces.append(latex[start:i])
                start = i + 1 + len(name)
            i += 1 + len(name)
            continue
        depth += {"{": 1, "}": -1}.get(latex[i], 0)
        i += 1
    pieces.append(latex[start:])
    formulas = []
    for piece in filter(None, map(str.strip, pieces)):
        if formulas and piece.startswith(_LABEL):  # a citation or number stays with its formula
            formulas[-1] += r"\quad " + piece
        else:
            formulas.append(piece)
    return formulas or [latex]
