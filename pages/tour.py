"""The guided tour: from tokens to heads, one step at a time, on the current sentence."""

import streamlit as st

from app import registry
from app.lecture import long_tour, presentation, share, tour
from app.state import session
from app.views import chart
from app.widgets import model_box, notices, pickers

step, warning = tour.parse_step(st.query_params.get("step"))
if warning:
    st.warning(warning)
current = tour.STEPS[step - 1]

st.progress(step / len(tour.STEPS), text=f"Step {step} of {len(tour.STEPS)}")
st.title(current.title)
share.top_on_change(step)
st.write(current.text)
settings, tokenization, run = notices.layer_or_stop()  # every page's notices
head = pickers.shared_head(run)
values = session.current()
labels = tokenization.labels
long = long_tour.is_long(labels)  # a trained model's: each n × n map as tiles with a zoom
says = long_tour.SAYS.get(current.says.__name__) if long else None
said = says(settings, head, labels) if says else current.says(settings, head, values)
if said:
    st.markdown(said)
if current.explore is None:  # the sidebar's model: not under SmolLM2's induction scores
    st.caption(notices.weights_note(settings, head))
elif session.presenting():  # nor the presenter bar's layer and head, the sidebar model's
    presentation.hide_layer_and_head()

# Back and Next above the figure, which can be taller than the screen. Their arrows are the
# shortcut's badges, which name the keys: the labels carry none of their own.
back, explore, forward = st.columns([1, 2, 1])
if back.button("Back", key="tour_back", disabled=step == 1, shortcut="Left"):
    st.query_params["step"] = str(step - 1)
    st.rerun()
target = registry.BY_SCRIPT[current.page].path
if current.explore is None:  # the page as the sidebar sets it: the figure's model
    explore.page_link(target, label="Explore this on its own page", icon=":material/open_in_new:")
elif explore.button(
    "Explore this on its own page",
    key="tour_explore",
    icon=":material/open_in_new:",
    type="tertiary",
):  # the page on the figure's model, layer and head, whatever the sidebar runs
    opened = current.explore()
    st.session_state[model_box.CHOICE_KEY] = opened.pop("model")  # a packaged model's name
    st.session_state[model_box.PATH_KEY] = ""
    st.session_state.update(opened)
    st.switch_page(target, query_params={"present": "1"} if session.presenting() else None)
if step < len(tour.STEPS):
    if forward.button("Next", key="tour_next", type="primary", shortcut="Right"):
        st.query_params["step"] = str(step + 1)
        st.rerun()
else:
    forward.success("End of the tour.")
drawn = long_tour.DRAWN.get(current.chart.__name__) if long else None
if drawn:
    drawn(settings, head, labels, step)
else:
    figure, table = current.chart(settings, head, values)
    chart.draw(st, figure, f"tour_step_{step}", table=table)
if step == len(tour.STEPS):
    st.subheader("Where next")
    for target, label in tour.WHERE_NEXT:
        st.page_link(target, label=label, icon=":material/arrow_forward:")
st.query_params["step"] = str(step)
