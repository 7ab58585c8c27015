// What every view shares: its signature, the page heading, errors, polling.

import { ApiError, SignedOut } from "../api";
import { AuthError } from "../auth";
import { h } from "../dom";
import type { Route } from "../router";

/** A view renders into `main`; `signal` aborts when the route changes (timers stop then). */
export type View = (main: HTMLElement, route: Route, signal: AbortSignal) => Promise<void>;

/** The page's one h1; focused on each route change so keyboard and screen reader users start there. */
export function heading(text: string): HTMLHeadingElement {
  document.title = `${text} · Agent hosting console`;
  return h("h1", { tabindex: -1 }, text);
}

/**
 * Runs a sign-in or sign-up form's action with its submit button disabled; on an error `clear`
 * empties the secret field, the sentence is shown in `errors`, and the field to retry has focus.
 */
export function submitting(form: HTMLFormElement, errors: HTMLElement, action: () => Promise<void>, clear: () => void): void {
  const button = form.querySelector<HTMLButtonElement>("button[type=submit]");
  if (button) button.disabled = true;
  action().catch((error: unknown) => {
    clear();
    if (button) button.disabled = false;
    showError(errors, error, form);
    form.querySelector<HTMLInputElement>("input[type=password], input[name=code]")?.focus();
  });
}

/**
 * Shows an error's sentence in `box` (role=alert); an API error naming a `field` marks and
 * focuses the control of that name in `form`.
 */
export function showError(box: HTMLElement, error: unknown, form?: HTMLFormElement): void {
  if (error instanceof SignedOut) return;
  const message =
    error instanceof ApiError || error instanceof AuthError
      ? error.message
      : "Something went wrong; try again.";
  box.replaceChildren(h("p", { class: "error", role: "alert" }, message));
  for (const marked of form?.querySelectorAll("[aria-invalid]") ?? []) marked.removeAttribute("aria-invalid");
  const name = error instanceof ApiError ? error.field : undefined;
  const control = name ? form?.querySelector<HTMLElement>(`[name="${CSS.escape(name)}"]`) : null;
  if (control) {
    control.setAttribute("aria-invalid", "true");
    control.focus();
  }
}

/** Runs `tick` now and then again after each `delay(ms)` it answers, until `signal` aborts. */
export function poll(signal: AbortSignal, tick: () => Promise<number>): void {
  let timer: number | undefined;
  const run = async (): Promise<void> => {
    if (signal.aborted) return;
    const wait = await tick().catch(() => 10_000);
    if (!signal.aborted) timer = window.setTimeout(run, wait);
  };
  signal.addEventListener("abort", () => window.clearTimeout(timer));
  void run();
}

export function errorBox(): HTMLDivElement {
  return h("div", { class: "errors" });
}
