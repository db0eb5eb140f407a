// The confirmation every forget goes through: what will be deleted, and the token the server asks for.
import * as api from './api.js';
import { toast } from './dom.js';

// Resolves to true when the user confirmed (the token field's value is then the stored token).
export function confirmForget({ title, message }) {
  const dialog = document.getElementById('confirm');
  const input = document.getElementById('confirm-token');
  const form = document.getElementById('confirm-form');
  const ok = document.getElementById('confirm-ok');
  const cancel = document.getElementById('confirm-cancel');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-message').textContent = message;
  input.value = api.token();
  return new Promise((resolve) => {
    const done = (answer) => {
      form.removeEventListener('submit', onOk);
      cancel.removeEventListener('click', onCancel);
      dialog.removeEventListener('cancel', onCancel);
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    const onOk = (event) => {
      event.preventDefault(); // the form only groups the fields: nothing is submitted anywhere
      if (!input.value.trim()) {
        input.focus();
        input.classList.add('invalid');
        return;
      }
      input.classList.remove('invalid');
      api.setToken(input.value);
      done(true);
    };
    const onCancel = (event) => {
      if (event) event.preventDefault();
      done(false);
    };
    form.addEventListener('submit', onOk);
    cancel.addEventListener('click', onCancel);
    dialog.addEventListener('cancel', onCancel);
    dialog.showModal();
    (input.value ? ok : input).focus();
  });
}

// Confirm, then POST /api/forget; returns the number deleted, or null when cancelled or refused.
export async function forget(bank, target, { title, message, onDone }) {
  if (!(await confirmForget({ title, message }))) return null;
  try {
    const result = await api.post('forget', { bank, ...target });
    toast(`Forgot ${result.deleted} ${result.deleted === 1 ? 'memory' : 'memories'}.`);
    if (onDone) onDone(result);
    return result.deleted;
  } catch (err) {
    // A wrong token is forgotten so the next try asks again; a read-only one stays (reads still work).
    if (err.status === 403 && err.kind !== 'ReadOnlyError') api.setToken('');
    toast(`Not forgotten: ${err.message}`);
    return null;
  }
}
