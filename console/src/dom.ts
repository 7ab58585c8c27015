// The one way views make elements: createElement, setAttribute and text nodes, never an HTML
// string (the CSP requires Trusted Types with no policy, so an HTML sink would throw).

type Child = Node | string | number | null | undefined | false;
type Handler = (event: Event) => void;
export type Attrs = Record<string, string | number | boolean | Handler | null | undefined>;

/** An element: `on*` attributes are listeners, `true` a bare attribute, false/null/undefined none. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "value" && "value" in element) {
      (element as HTMLInputElement).value = String(value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

let nextId = 0;
/** A fresh id for a control and its label. */
export function uid(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A labelled control: `<div class="field"><label for>text</label>control hint?</div>`. */
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): HTMLDivElement {
  if (!control.id) control.id = uid(control.name || "field");
  const parts: Child[] = [h("label", { for: control.id }, label), control];
  if (hint) {
    const hintId = `${control.id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("p", { class: "hint", id: hintId }, hint));
  }
  return h("div", { class: "field" }, parts);
}

/** A timestamp as the reader's local time, the exact value kept in `datetime`. */
export function time(iso: string | null | undefined): Node {
  if (!iso) return document.createTextNode("—");
  const date = new Date(iso);
  const text = Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
  return h("time", { datetime: iso }, text);
}

/** A table with a caption (its accessible name) and header cells. */
export function table(caption: string, headers: string[], rows: Child[][]): HTMLTableElement {
  return h(
    "table",
    {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((text) => h("th", { scope: "col" }, text)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
  );
}

/** Says something to screen readers (and shows it) through the page's polite status region. */
export function announce(message: string): void {
  const status = document.getElementById("status");
  if (status) status.textContent = message;
}
