// After a lost connection comes back, one run of the page from the address bar: when a
// replica behind HAProxy dies (scripts/serve_class.sh) the page reconnects to another,
// whose new session knows nothing, and Streamlit reruns nothing by itself (a page switch
// would clear the query string). The run reads the link first (app/state/session.py).

let rerun = null;
let watched = false;

// One observer per window, though every run of the page hands in a trigger.
function watchConnection() {
  if (watched) return;
  watched = true;
  let state = null; // the connection state last seen, once the app has connected
  const look = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const now = app?.dataset.testConnectionState;
    if (!now || now === state) return;
    const back = now === "CONNECTED" && state !== null && state !== "CONNECTED";
    if (now === "CONNECTED" || state !== null) state = now;
    if (back && rerun) rerun();
  };
  new MutationObserver(look).observe(document.body, {
    subtree: true,
    attributes: true,
    attributeFilter: ["data-test-connection-state"],
    childList: true,
  });
  look();
}

// `trigger`, the latest page element's, runs the page with the address bar's query string.
export function rerunOnReconnect(trigger) {
  rerun = trigger;
  watchConnection();
}
