// #/sign-in: email and password, then what Cognito asks (a new password for an invited person,
// an authenticator code when TOTP is on).

import { answerNewPassword, answerTotp, signIn, type Step } from "../auth";
import { config } from "../config";
import { field, h } from "../dom";
import { errorBox, heading, submitting, type View } from "./common";

export const signinView = (done: () => void): View => async (main) => {
  const render = (step: Step | undefined): void => {
    const errors = errorBox();
    let form: HTMLFormElement;
    if (!step) {
      const email = h("input", { name: "email", type: "email", autocomplete: "username", required: true });
      const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
      form = h("form", { class: "card", novalidate: true }, errors, field("Email", email), field("Password", password),
        h("button", { type: "submit" }, "Sign in"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        submit(() => signIn(email.value.trim(), password.value), () => (password.value = ""));
      });
      // With the stack's SelfSignUp, a way in for someone without an account.
      const signUp = config().selfSignUp
        ? [h("p", {}, "No account yet? ", h("a", { href: "#/sign-up" }, "Create an account"))]
        : [];
      main.replaceChildren(heading("Sign in"), form, ...signUp);
      email.focus();
      return;
    }
    if (step.kind === "newPassword") {
      const password = h("input", { name: "newPassword", type: "password", autocomplete: "new-password", required: true });
      form = h("form", { class: "card", novalidate: true }, errors,
        h("p", {}, "Choose a password to replace the one you were given."),
        field("New password", password, "At least 12 characters, with upper and lower case letters and a number."),
        h("button", { type: "submit" }, "Set password and sign in"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        submit(() => answerNewPassword(step, password.value), () => (password.value = ""));
      });
      main.replaceChildren(heading("Choose a password"), form);
      password.focus();
      return;
    }
    if (step.kind === "totp") {
      const code = h("input", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]{6}", required: true });
      form = h("form", { class: "card", novalidate: true }, errors, field("Code from your authenticator app", code),
        h("button", { type: "submit" }, "Verify"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        submit(() => answerTotp(step, code.value.trim()), () => (code.value = ""));
      });
      main.replaceChildren(heading("Authenticator code"), form);
      code.focus();
      return;
    }
    done();

    function submit(action: () => Promise<Step>, clear: () => void): void {
      submitting(form, errors, async () => {
        const nextStep = await action();
        clear();
        if (nextStep.kind === "done") done();
        else render(nextStep);
      }, clear);
    }
  };
  render(undefined);
};
