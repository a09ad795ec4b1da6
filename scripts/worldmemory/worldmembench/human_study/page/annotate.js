// The annotation page of WorldMemBench's human study (Appendix F, Figures 8 and 9): one study
// (window.STUDY, from data.js), answered by clicks or keys, kept in localStorage per study,
// annotator and study-set digest, exported as <annotator>.<study>.json with that digest
// (human_study/exports.py's contract) and as <annotator>.<study>.csv.
"use strict";
(function () {
  const S = window.STUDY;
  const STATIC = S.study === "static";
  const UNIT = STATIC ? "pair" : "instance";
  const ANNOTATOR = /^[A-Za-z0-9_-]+$/;
  const BASE = "worldmemory:" + S.study + ":" + S.digest;
  const KEYS = STATIC
    ? "keys: 1 / a = A wins, 2 / t = Tie, 3 / b = B wins, \u2190 \u2192 previous / next"
    : "keys: y / n = event started or not, 1\u20138 = toggle item yes / no, \u2190 \u2192 previous / next";
  const CHOICE_KEYS = { 1: "A", a: "A", 2: "tie", t: "tie", 3: "B", b: "B" };
  const $ = (id) => document.getElementById(id);
  let annotator = null;
  let answers = {};
  let index = 0;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => { if (k === "class") node.className = v; else node.setAttribute(k, v); });
    children.forEach((c) => node.append(c));
    return node;
  }

  // A clip that plays at once, muted and looped (autoplay needs muted set as a property).
  function clip(src, id) {
    const video = el("video", { src, id, autoplay: "", loop: "", playsinline: "", controls: "" });
    video.muted = true;
    return video;
  }

  function save() { localStorage.setItem(BASE + ":" + annotator, JSON.stringify({ answers, index })); }

  function begin(name) {
    annotator = name;
    localStorage.setItem(BASE + ":annotator", name);
    const saved = JSON.parse(localStorage.getItem(BASE + ":" + name) || "{}");
    answers = saved.answers || {};
    index = Math.min(saved.index || 0, S.items.length - 1);
    $("login").hidden = true;
    ["task", "nav", "switch"].forEach((id) => { $(id).hidden = false; });
    $("who").textContent = "annotator " + name;
    show();
  }

  function login() {
    annotator = null;
    localStorage.removeItem(BASE + ":annotator");
    ["task", "nav", "switch"].forEach((id) => { $(id).hidden = true; });
    $("who").textContent = "";
    $("progress").textContent = "";
    $("login").hidden = false;
    $("annotator").focus();
  }

  function complete(answer) {
    if (STATIC) return answer !== undefined;
    return answer !== undefined && (answer.started === false ||
      (answer.started === true && answer.items.every((v) => v === 0 || v === 1)));
  }

  function exported() {
    return S.items.filter((item) => complete(answers[item.id])).map((item) => {
      const a = answers[item.id];
      return STATIC ? { pair: item.id, choice: a }
        : { instance: item.id, started: a.started, items: a.started ? a.items.slice() : new Array(8).fill(0) };
    });
  }

  function download(name, text, type) {
    const link = el("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
    document.body.append(link);
    link.click();
    link.remove();
  }

  function exportJson() {
    const data = { study: S.study, study_set: S.digest, annotator, answers: exported() };
    download(annotator + "." + S.study + ".json", JSON.stringify(data, null, 1) + "\n", "application/json");
  }

  function exportCsv() {
    const head = STATIC ? "pair,choice" : "instance,started," + [1, 2, 3, 4, 5, 6, 7, 8].map((i) => "item" + i).join(",");
    const rows = exported().map((a) => STATIC ? a.pair + "," + a.choice : [a.instance, a.started, ...a.items].join(","));
    download(annotator + "." + S.study + ".csv", [head, ...rows].join("\n") + "\n", "text/csv");
  }

  function go(step) {
    index = Math.max(0, Math.min(S.items.length - 1, index + step));
    save();
    show();
  }

  function answer(value) {
    answers[S.items[index].id] = value;
    save();
    if (complete(value) && index < S.items.length - 1 && (STATIC || value.started === false)) go(1); else show();
  }

  function show() {
    const item = S.items[index];
    const done = S.items.filter((i) => complete(answers[i.id])).length;
    $("progress").textContent = UNIT + " " + (index + 1) + " of " + S.items.length + " \u00b7 " + done + " answered";
    $("task").replaceChildren(...(STATIC ? staticTask(item) : dynamicTask(item)));
    $("prev").disabled = index === 0;
    $("next").disabled = index === S.items.length - 1;
  }

  // Figure 8: reference frames and revisit clip of each side, A wins / Tie / B wins.
  function staticTask(item) {
    const chosen = answers[item.id];
    const side = (s) => el("div", { class: "side", id: "side-" + s }, el("h2", {}, s),
      el("div", { class: "strip" }, ...item[s].reference.map((src) => el("img", { src, alt: s + " reference" }))),
      el("div", {}, "revisit"),
      clip(item[s].clip, "clip-" + s));
    const button = (value, label) => {
      const b = el("button", { type: "button", id: "choose-" + value, class: chosen === value ? "chosen" : "" }, label);
      b.onclick = () => answer(value);
      return b;
    };
    return [el("p", { class: "question" }, item.question),
      el("p", { class: "meta" }, "revisit R" + item.revisit + " of " + item.trajectory + " (frames " +
        item.revisit_frames[0] + "\u2013" + (item.revisit_frames[1] - 1) + "); reference: frames " +
        item.reference_frames[0] + "\u2013" + (item.reference_frames[1] - 1)),
      el("div", { class: "sides" }, side("A"), side("B")),
      el("div", { class: "choices" }, button("A", "A wins"), button("tie", "Tie"), button("B", "B wins"))];
  }

  // An instance's answer so far; a "not started" keeps the items given before (exported as 0).
  function checklist(item) {
    return answers[item.id] || { started: null, items: new Array(8).fill(null) };
  }

  // Figure 9: the clip on its phase timeline, the event gate, then the eight checklist items.
  function dynamicTask(item) {
    const a = checklist(item);
    const video = clip(item.clip, "clip");
    const cursor = el("div", { class: "cursor" });
    const phases = item.phases.map((p) => el("div", { class: "phase", style: "width:" +
      (100 * (p.end - p.start) / item.n_frames) + "%", title: p.phase }, p.phase + " " + p.start + "\u2013" + (p.end - 1)));
    const frameText = el("div", { class: "meta" });
    video.addEventListener("timeupdate", () => {
      const frame = Math.min(item.n_frames - 1, Math.floor(video.currentTime * item.fps));
      cursor.style.left = (100 * frame / item.n_frames) + "%";
      const current = item.phases.findIndex((p) => p.start <= frame && frame < p.end);
      phases.forEach((node, i) => node.classList.toggle("current", i === current));
      frameText.textContent = "frame " + frame + (current >= 0 ? " \u00b7 " + item.phases[current].phase : "");
    });
    const yesNo = (chosen, onYes, onNo, disabled, id) => el("span", { class: "answer" },
      ...[[1, "Yes", onYes], [0, "No", onNo]].map(([v, label, f]) => {
        const b = el("button", { type: "button", id: id + (v ? "-yes" : "-no"), class: chosen === v ? "chosen" : "" }, label);
        b.disabled = disabled;
        b.onclick = f;
        return b;
      }));
    const gated = a.started !== true;
    const items = item.questions.map((q, i) => {
      const value = a.started === false ? 0 : a.items[i];
      const set = (v) => () => { const next = a.items.slice(); next[i] = v; answer({ started: true, items: next }); };
      return el("li", { class: gated ? "disabled" : "", id: "item-" + (i + 1) },
        "[" + q.aspect.replace(/_/g, " ") + "] " + q.text + " ",
        yesNo(value, set(1), set(0), gated, "item-" + (i + 1)));
    });
    const started = a.started === null ? null : a.started ? 1 : 0;
    const event = "Initial state: " + item.event.initial_state + " Action: " + item.event.action +
      " Expected next state: " + item.event.expected_next_state;
    return [el("p", { class: "question" }, "Event: " + event),
      el("p", { class: "meta" }, item.case + " \u00b7 " + item.trajectory),
      video, el("div", { class: "timeline" }, ...phases, cursor), frameText,
      el("div", { class: "gate" }, "Has the event visibly started during the initial hold? ",
        yesNo(started, () => answer({ started: true, items: a.items.slice() }),
          () => answer({ started: false, items: a.items.slice() }), false, "gate")),
      el("ol", { class: "items" }, ...items)];
  }

  function key(event) {
    if (!annotator || event.target.tagName === "INPUT" || event.ctrlKey || event.metaKey || event.altKey) return;
    const k = event.key.toLowerCase();
    if (k === "arrowleft") go(-1);
    else if (k === "arrowright") go(1);
    else if (STATIC && CHOICE_KEYS[k]) answer(CHOICE_KEYS[k]);
    else if (!STATIC) {
      const a = checklist(S.items[index]);
      if (k === "y" || k === "n") answer({ started: k === "y", items: a.items.slice() });
      else if (a.started === true && /^[1-8]$/.test(k)) {
        const next = a.items.slice();
        next[+k - 1] = next[+k - 1] === 1 ? 0 : 1;
        answer({ started: true, items: next });
      } else return;
    } else return;
    event.preventDefault();
  }

  document.title = "WorldMemBench human study: " + (STATIC ? "Static Memory A/B" : "Dynamic Memory checklist");
  $("title").textContent = document.title;
  $("keys").textContent = KEYS;
  $("login").onsubmit = (event) => {
    event.preventDefault();
    const name = $("annotator").value.trim();
    if (ANNOTATOR.test(name)) begin(name);
    else $("login-error").textContent = "use letters, digits, _ and - only (the export is <id>." + S.study + ".json)";
  };
  $("switch").onclick = login;
  $("prev").onclick = () => go(-1);
  $("next").onclick = () => go(1);
  $("export-json").onclick = exportJson;
  $("export-csv").onclick = exportCsv;
  document.addEventListener("keydown", key);
  const last = localStorage.getItem(BASE + ":annotator");
  if (last) begin(last); else login();
})();
