// #/settings/security: the optional authenticator app (TOTP) of the person signed in.

import { associateTotp, mfaState, setTotp, signedInEmail, verifyTotp } from "../auth";
import { announce, field, h } from "../dom";
import { go, link } from "../router";
import { errorBox, heading, showError, type View } from "./common";

export const securityView: View = async (main) => {
  const errors = errorBox();
  const body = h("div", {}, h("p", {}, "Loading…"));
  main.replaceChildren(heading("Security"), h("p", {}, `Signed in as ${signedInEmail()}.`), errors, body);
  const reload = (): void => go(link(["settings", "security"]));
  try {
    const state = await mfaState();
    if (state.enabled) {
      const off = h("button", { type: "button", class: "danger" }, "Turn off the authenticator app");
      off.addEventListener("click", () => {
        setTotp(false).then(() => { announce("Authenticator app turned off"); reload(); })
          .catch((error: unknown) => showError(errors, error));
      });
      body.replaceChildren(h("p", {}, "Sign-in asks for a code from your authenticator app."), off);
      return;
    }
    const start = h("button", { type: "button" }, "Set up an authenticator app");
    start.addEventListener("click", () => {
      associateTotp().then((secret) => {
        const uri = `otpauth://totp/Agent%20hosting:${encodeURIComponent(signedInEmail())}?secret=${encodeURIComponent(secret)}&issuer=Agent%20hosting`;
        const secretField = h("input", { name: "totpSecret", readonly: true, value: secret, spellcheck: "false" });
        const uriField = h("input", { name: "totpUri", readonly: true, value: uri, spellcheck: "false" });
        const code = h("input", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", required: true });
        const form = h("form", { class: "card", "aria-label": "Verify the authenticator app" },
          h("p", {}, "Add this secret to your authenticator app (or paste the link into one), then type the code it shows."),
          field("Secret", secretField), field("Link", uriField), field("Code", code),
          h("button", { type: "submit" }, "Verify and turn on"));
        form.addEventListener("submit", (event) => {
          event.preventDefault();
          verifyTotp(code.value.trim()).then(() => { announce("Authenticator app turned on"); reload(); })
            .catch((error: unknown) => { code.value = ""; showError(errors, error, form); code.focus(); });
        });
        body.replaceChildren(form);
        secretField.focus();
      }).catch((error: unknown) => showError(errors, error));
    });
    body.replaceChildren(h("p", {}, "Sign-in asks only for your password. An authenticator app adds a code."), start);
  } catch (error) {
    body.replaceChildren();
    showError(errors, error);
  }
};
