"""The guided tour: from tokens to heads, one step at a time, on the current sentence."""

import streamlit as st

from app import controls, render, state, tour

step, warning = tour.parse_step(st.query_params.get("step"))
if warning:
    st.warning(warning)
current = tour.STEPS[step - 1]

st.progress(step / len(tour.STEPS), text=f"Step {step} of {len(tour.STEPS)}")
st.title(current.title)
st.write(current.text)
controls.toy_run()  # the same token notices as every page
figure, table = current.chart(state.current())
render.chart(st, figure, key=f"tour_step_{step}", table=table)

back, explore, forward = st.columns([1, 2, 1])
if back.button("← Back", key="tour_back", disabled=step == 1, shortcut="Left"):
    st.query_params["step"] = str(step - 1)
    st.rerun()
explore.page_link(current.page, label="Explore this on its own page", icon=":material/open_in_new:")
if step < len(tour.STEPS):
    if forward.button("Next →", key="tour_next", type="primary", shortcut="Right"):
        st.query_params["step"] = str(step + 1)
        st.rerun()
else:
    forward.success("End of the tour.")
st.query_params["step"] = str(step)
