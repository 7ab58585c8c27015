// #/settings/api-keys?tab=private|public: the account's keys by kind; Create shows the new key
// once, in a modal dialog, and forgets it when the dialog closes; Revoke asks first.

import { api, type KeyKind, type KeySummary } from "../api";
import { announce, field, h, table, time } from "../dom";
import { link } from "../router";
import { errorBox, heading, showError, type View } from "./common";

const KINDS: Record<KeyKind, { tab: string; about: string }> = {
  private: { tab: "Private", about: "Private keys (ahk_) may call every route of the API. Keep them on servers." },
  public: { tab: "Public", about: "Public keys (ahp_) may only start sessions; they may ship in a web page or an app." },
};

export const keysView: View = async (main, route, signal) => {
  const kind: KeyKind = route.query.get("tab") === "public" ? "public" : "private";
  const errors = errorBox();
  const list = h("div", {}, h("p", {}, "Loading…"));
  const tabs = h("nav", { class: "tabs", "aria-label": "Key kind" },
    (Object.keys(KINDS) as KeyKind[]).map((each) =>
      h("a", { href: link(["settings", "api-keys"], { tab: each }), "aria-current": each === kind ? "page" : null }, KINDS[each].tab)));
  const name = h("input", { name: "name", required: true, maxlength: 64, autocomplete: "off" });
  const form = h("form", { class: "card", "aria-label": `Create a ${kind} key` },
    field("Name", name, "What the key is for, e.g. ci or web (1 to 64 characters)."),
    h("button", { type: "submit" }, `Create ${kind} key`));
  const heading1 = heading("API keys");
  // The list is read again in place, never by navigating: a dialog closed or a key revoked just
  // as the person moves to another page must not bring them back here.
  const load = async (): Promise<void> => {
    try {
      const keys = (await api.keys()).keys.filter((key) => key.kind === kind);
      if (signal.aborted) return;
      list.replaceChildren(keys.length === 0 ? h("p", {}, `No ${kind} keys.`) : keysTable(kind, keys, errors, revoked));
    } catch (error) {
      if (signal.aborted) return;
      list.replaceChildren();
      showError(errors, error);
    }
  };
  // A revoked key's button is gone with the list read again: the page's heading takes the focus.
  const revoked = (): void => void load().then(() => { if (!signal.aborted) heading1.focus(); });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    api.createKey(kind, name.value.trim())
      .then((created) => {
        name.value = "";
        showOnce(created.key, created.name, () => void load());
      })
      .catch((error: unknown) => showError(errors, error, form));
  });
  main.replaceChildren(heading1, tabs, h("p", {}, KINDS[kind].about), errors, form, list);
  await load();
};

function keysTable(kind: KeyKind, keys: KeySummary[], errors: HTMLElement, revoked: () => void): Node {
  return h("div", {},
    table(`${KINDS[kind].tab} keys`, ["Name", "Key", "Created", "Revoked", "Action"], keys.map((key) => {
      let action: Node | string = "—";
      if (!key.revokedAt) {
        const revoke = h("button", { type: "button", class: "danger", "aria-label": `Revoke ${key.name}` }, "Revoke");
        revoke.addEventListener("click", () => {
          if (!window.confirm(`Revoke ${key.name} (${key.hint}…)? It stops working within a minute.`)) return;
          api.revokeKey(key.id).then(() => { announce(`${key.name} revoked`); revoked(); })
            .catch((error: unknown) => showError(errors, error));
        });
        action = revoke;
      }
      return [key.name, h("code", {}, `${key.hint}…`), time(key.createdAt), time(key.revokedAt), action];
    })),
    h("p", { class: "hint" }, "A revoked key stops working within a minute."));
}

/** The modal that shows a created key once; closing it removes the dialog and the value. */
function showOnce(key: string, name: string, closed: () => void): void {
  const value = h("input", { name: "createdKey", readonly: true, value: key, class: "secret", spellcheck: "false" });
  const copy = h("button", { type: "button" }, "Copy");
  const close = h("button", { type: "button" }, "Done");
  const dialog = h("dialog", { "aria-labelledby": "created-h", class: "card" },
    h("h2", { id: "created-h" }, `Key ${name} created`),
    h("p", {}, "Copy it now: it is shown once and cannot be read again."),
    field("Key", value), h("div", { class: "actions" }, copy, close));
  copy.addEventListener("click", () => {
    navigator.clipboard.writeText(value.value).then(() => announce("Key copied"), () => {
      value.select();
      announce("Copy failed; the key is selected, copy it with the keyboard");
    });
  });
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    value.value = "";
    dialog.remove();
    closed();
  });
  document.body.appendChild(dialog);
  dialog.showModal();
  value.focus();
  value.select();
}
