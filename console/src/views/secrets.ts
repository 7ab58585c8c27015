// #/secrets and #/secrets/{set}: names, types and dates only (the API never answers a value);
// a value is typed into a password input, sent once, and cleared whatever the answer.

import { api } from "../api";
import { announce, field, h, table, time } from "../dom";
import { go, link } from "../router";
import { errorBox, heading, showError, type View } from "./common";

/** A form setting one key of a set; `set` absent: the set's name is asked too. */
function setValueForm(set: string | undefined, done: (set: string, key: string) => void): HTMLFormElement {
  const errors = errorBox();
  const setName = h("input", { name: "setName", required: true, autocomplete: "off" });
  const key = h("input", { name: "secretKey", required: true, autocomplete: "off" });
  const value = h("input", { name: "secretValue", type: "password", required: true, autocomplete: "off" });
  const form = h("form", { class: "card", "aria-label": set ? "Set a value" : "New secret" }, errors,
    set ? null : field("Set name", setName, "Letters, digits and dashes; a new name makes a new set."),
    field("Key", key, "For example OPENAI_API_KEY."),
    field("Value", value, "Sent once and never shown again."),
    h("button", { type: "submit" }, "Save"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const target = set ?? setName.value.trim();
    const secretKey = key.value.trim();
    const secretValue = value.value;
    value.value = "";
    api.setSecret(target, secretKey, secretValue)
      .then(() => {
        announce(`${secretKey} saved in ${target}`);
        done(target, secretKey);
      })
      .catch((error: unknown) => {
        // The API's field names are the body's: `name` is the set's.
        showError(errors, error, form);
        if (!set && (error as { field?: string }).field === "name") setName.focus();
      });
  });
  return form;
}

export const secretsView: View = async (main) => {
  const errors = errorBox();
  const list = h("div", {}, h("p", {}, "Loading…"));
  main.replaceChildren(heading("Secrets"), errors, list,
    h("h2", {}, "New secret"), setValueForm(undefined, (set) => go(link(["secrets", set]))));
  try {
    const { sets } = await api.secretSets();
    list.replaceChildren(sets.length === 0 ? h("p", {}, "No secret sets yet.") : table("Secret sets", ["Name", "Type", "Updated"],
      sets.map((set) => [h("a", { href: link(["secrets", set.name]) }, set.name),
        set.type === "imagePullSecret" ? "Image pull credentials" : "Secrets", time(set.updatedAt)])));
  } catch (error) {
    list.replaceChildren();
    showError(errors, error);
  }
};

export const secretSetView: View = async (main, route) => {
  const name = route.path[1] ?? "";
  const errors = errorBox();
  const body = h("div", {}, h("p", {}, "Loading…"));
  main.replaceChildren(heading(`Secret set ${name}`), h("p", {}, h("a", { href: link(["secrets"]) }, "All secret sets")), errors, body);
  const reload = (): void => go(link(["secrets", name]));
  try {
    const set = await api.secretSet(name);
    const remove = h("button", { type: "button", class: "danger" }, `Delete set ${name}`);
    remove.addEventListener("click", () => {
      if (!window.confirm(`Delete the secret set ${name}? Agents naming it can no longer deploy.`)) return;
      api.deleteSecretSet(name).then(() => { announce(`${name} deleted`); go(link(["secrets"])); })
        .catch((error: unknown) => showError(errors, error));
    });
    if (set.type === "imagePullSecret") {
      body.replaceChildren(h("p", {}, `Image pull credentials for ${set.host ?? "a registry"}, updated `, time(set.updatedAt), "."), remove);
      return;
    }
    const keys = set.secrets ?? [];
    body.replaceChildren(
      keys.length === 0 ? h("p", {}, "No keys.") : table("Keys", ["Key", "Updated", "Action"], keys.map((secret) => {
        const unset = h("button", { type: "button", "aria-label": `Unset ${secret.fieldName}` }, "Unset");
        unset.addEventListener("click", () => {
          if (!window.confirm(`Unset ${secret.fieldName}?`)) return;
          api.unsetSecret(name, secret.fieldName).then(() => { announce(`${secret.fieldName} unset`); reload(); })
            .catch((error: unknown) => showError(errors, error));
        });
        return [h("code", {}, secret.fieldName), time(secret.updatedAt), unset];
      })),
      h("h2", {}, "Set a value"),
      setValueForm(name, reload),
      h("h2", {}, "Delete"),
      remove,
    );
  } catch (error) {
    body.replaceChildren();
    showError(errors, error);
  }
};
