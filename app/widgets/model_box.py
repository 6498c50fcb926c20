"""Which model /pretrained shows: MiniLM, or a checkpoint folder typed in its path box.

The box is kept for the session; the link carries the folder's name (``model=tiny-gpt2``),
never its path, and a link opens the folder only on a server that has loaded a folder of
that name (:func:`app.data.models.path_of`); elsewhere it says so and shows MiniLM, the
rest of the link kept. A folder the engine refuses is said so in a notice (its message,
escaped), and the page shows MiniLM.
"""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from app.data import models
from app.state import controls

#: The path box's key, and the link's parameter naming the folder.
PATH_KEY, LINK = "pretrained_model_path", "model"
MINILM_NAME = "all-MiniLM-L6-v2"
FAMILY_NAMES = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "distilbert": "DistilBERT",
    "electra": "ELECTRA",
    "gpt2": "GPT-2",
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2",
}


def _start():
    """Once per session: the folder the link names (when this server knows it), else --model's."""
    if PATH_KEY in st.session_state:
        return
    name = st.query_params.get(LINK)
    path = models.start_folder() if name is None else models.path_of(name)
    if name is not None and path is None:
        st.session_state["_model_link_unknown"] = name
    st.session_state[PATH_KEY] = path or ""


def chosen():
    """The path box, and the model it names: ``(folder or None for MiniLM, model or error)``.

    A refused folder is said so and MiniLM shown instead; MiniLM's own absence is
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
    if not models.typed_folders():
        folder = st.session_state[PATH_KEY] or None  # the link's or --model's, never typed
        _write_link(folder)
        return folder, models.model(folder)
    with st.expander(
        "Your own model: a checkpoint folder", expanded=bool(st.session_state[PATH_KEY])
    ):
        typed = st.text_input(
            "Folder (config.json, model.safetensors, tokenizer.json); empty for MiniLM",
            key=PATH_KEY,
            placeholder="/path/to/a/bert-gpt2-or-llama-folder",
            persist_state="session",
        ).strip()
        folder = str(Path(typed).expanduser().resolve()) if typed else None
        loaded = models.model(folder)
        if folder is not None and isinstance(loaded, Exception):
            st.error(controls.md_escape(str(loaded)), icon="🚫")
            st.caption("This engine reads safetensors only and never runs code from the folder.")
            folder, loaded = None, models.model(None)
        if folder is not None:
            models.remember(folder)
    _write_link(folder)
    return folder, loaded


def reading_limit(model, folder):
    """What ``model`` reads: its positions (``max_position_embeddings``), its own tokens counted.

    From the model's config: 512 for BERT's family, 1,024 for GPT-2, as many as a
    Llama, Mistral or Qwen2 config gives its rotary positions.
    """
    specials = [controls.md_escape(token) for token in model.special_tokens]
    counted = f", {' and '.join(specials)} included" if specials else ""
    return (
        f"{title(folder)} reads at most {model.config.max_tokens:,} tokens{counted}; "
        "a longer text is refused."
    )


def session_limit():
    """:func:`reading_limit` of the model /pretrained shows this session, or None.

    The folder in the path box (or the link's, or ``--model``'s); MiniLM for none, or for
    a folder the engine refuses, as the page shows it. None when MiniLM is missing too.
    """
    _start()
    typed = st.session_state[PATH_KEY].strip()
    folder = str(Path(typed).expanduser().resolve()) if typed else None
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
    typed = st.session_state[PATH_KEY].strip()
    folder = str(Path(typed).expanduser().resolve()) if typed else None
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
    """The model's name as Markdown: MiniLM's, or its folder's (escaped: shown as typed)."""
    return MINILM_NAME if folder is None else controls.md_escape(models.name_of(folder))


def file_name(folder):
    """The model's name as exported files carry it: MiniLM's, or its folder's, file-name safe."""
    name = MINILM_NAME if folder is None else models.name_of(folder)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def description(config, folder):
    """One line on the model: its family, layers, heads and sizes, and whose code runs it."""
    family = FAMILY_NAMES.get(config.model_type, config.model_type)
    kind = "decoder (causal)" if config.causal else "encoder"
    where = "MiniLM's package" if folder is None else "its folder"
    parts = []
    if config.rotary:
        parts.append("rotary positions, RMSNorm and a SwiGLU feed-forward")
    if config.kv_heads < config.n_heads:
        parts.append(f"{config.kv_heads} key/value heads (grouped-query attention)")
    if config.sliding_window:
        parts.append(f"a {config.sliding_window}-token sliding window")
    if config.precision != "float32":
        parts.append(f"weights kept in {config.precision}, computed in float32")
    parts.append(f"positions for {config.max_tokens:,} tokens, the most it reads")
    extra = f" It has {', '.join(parts)}." if parts else ""
    return (
        f"A {config.n_layers}-layer, {config.n_heads}-head {family} {kind}, d_model "
        f"{config.d_model}, {config.n_vocab:,} tokens in its vocabulary, read from {where} "
        f"with safetensors and run by our own NumPy forward pass: no PyTorch.{extra}"
    )
