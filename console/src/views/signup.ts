// #/sign-up (only when config.json's selfSignUp is true): email and password, then the code
// Cognito e-mails; once confirmed, the person is signed in with the password they chose (kept in
// this closure only until then).

import { confirmSignUp, resendCode, signIn, signUp, type Step } from "../auth";
import { announce, field, h } from "../dom";
import { errorBox, heading, showError, submitting, type View } from "./common";

const POLICY = "At least 12 characters, with upper and lower case letters and a number.";

export const signupView = (done: (step: Step) => void): View => async (main) => {
  const errors = errorBox();
  const email = h("input", { name: "email", type: "email", autocomplete: "username", required: true });
  const password = h("input", { name: "newPassword", type: "password", autocomplete: "new-password", required: true });
  const form = h("form", { class: "card", novalidate: true }, errors, field("Email", email),
    field("Password", password, POLICY), h("button", { type: "submit" }, "Create account"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const address = email.value.trim();
    const chosen = password.value;
    submitting(form, errors, async () => {
      const needsCode = await signUp(address, chosen);
      if (needsCode) confirmStep(address, chosen);
      else done(await signIn(address, chosen));
    }, () => (password.value = ""));
  });
  main.replaceChildren(heading("Create an account"), form,
    h("p", {}, "Already have an account? ", h("a", { href: "#/sign-in" }, "Sign in")));
  email.focus();

  function confirmStep(address: string, chosen: string): void {
    const errors = errorBox();
    const code = h("input", { name: "code", inputmode: "numeric", autocomplete: "one-time-code", required: true });
    const resend = h("button", { type: "button", class: "link" }, "Send a new code");
    const form = h("form", { class: "card", novalidate: true }, errors,
      h("p", {}, `We sent a code to ${address}.`), field("Code from the email", code),
      h("button", { type: "submit" }, "Confirm and sign in"), resend);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      submitting(form, errors, async () => {
        await confirmSignUp(address, code.value.trim());
        done(await signIn(address, chosen));
      }, () => (code.value = ""));
    });
    resend.addEventListener("click", () => {
      resendCode(address).then(() => announce(`A new code was sent to ${address}.`), (error: unknown) => showError(errors, error, form));
    });
    main.replaceChildren(heading("Confirm your email"), form);
    code.focus();
  }
};
