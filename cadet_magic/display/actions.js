// The %%ask panel's action bar (anywidget front end): insert the final SQL as a %%sql cell
// below, copy the SQL, keep the answer as an example (%cadet keep). Inserting is done by the kernel through JupyterLab's commands (ipylab);
// copying uses the browser clipboard, with a visible fallback (the SQL selected in a text box).

function makeButton(label, title, cls) {
  const b = document.createElement("button");
  b.className = `jupyter-button widget-button cadet-action ${cls}`;
  b.textContent = label;
  b.title = title;
  return b;
}

function render({ model, el }) {
  el.classList.add("cadet-actions");
  const bar = document.createElement("div");
  bar.className = "cadet-actions-bar";
  const insert = makeButton(
    "Insert %%sql cell below",
    "Insert the final SQL as a %%sql cell below this one (jupysql)",
    "cadet-insert",
  );
  const copy = makeButton("Copy SQL", "Copy the final SQL to the clipboard", "cadet-copy");
  const keep = makeButton(
    "Keep this answer",
    "Keep this question and its SQL as an example for later questions on this database",
    "cadet-keep",
  );
  const note = document.createElement("span");
  note.className = "cadet-action-note";
  const manual = document.createElement("textarea");
  manual.className = "cadet-manual";
  manual.readOnly = true;
  manual.rows = 4;
  manual.hidden = true;
  bar.append(insert, copy, keep, note);
  el.append(bar, manual);

  function showManual(text, message) {
    manual.value = text;
    manual.hidden = false;
    manual.focus();
    manual.select();
    note.textContent = message;
  }

  function sync() {
    const sql = model.get("sql") || "";
    insert.disabled = !sql;
    copy.disabled = !sql;
    keep.hidden = !model.get("can_keep");
    keep.disabled = !sql || model.get("kept");
    note.textContent = model.get("status") || "";
    const fallbackText = model.get("manual_text") || "";
    if (fallbackText) {
      showManual(fallbackText, model.get("status") || "Select the text below and copy it.");
    }
  }

  insert.addEventListener("click", () => {
    note.textContent = "Inserting a %%sql cell below\u2026";
    model.send({ event: "insert" });
  });

  keep.addEventListener("click", () => {
    note.textContent = "Keeping this answer\u2026";
    model.send({ event: "keep" });
  });

  copy.addEventListener("click", async () => {
    const sql = model.get("sql") || "";
    try {
      if (!navigator.clipboard || !window.isSecureContext) {
        throw new Error("no clipboard access");
      }
      await navigator.clipboard.writeText(sql);
      note.textContent = "SQL copied to the clipboard.";
      manual.hidden = true;
    } catch (err) {
      showManual(sql, "The browser blocked the clipboard: the SQL is selected below, press Ctrl+C.");
      try {
        document.execCommand("copy");
      } catch (e) {
        // the selected text stays visible for a manual copy
      }
    }
  });

  model.on("change:sql", sync);
  model.on("change:status", sync);
  model.on("change:manual_text", sync);
  model.on("change:kept", sync);
  model.on("change:can_keep", sync);
  sync();
}

export default { render };
