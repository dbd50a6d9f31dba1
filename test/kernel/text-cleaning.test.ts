import { describe, expect, it } from 'vitest';
import { cleanControlCharacters, controlCharacterWarning } from '../../src/kernel/text-cleaning.js';

describe('cleanControlCharacters', () => {
  it('keeps tab, newline and carriage return (a CRLF file round-trips)', () => {
    expect(cleanControlCharacters('a\tb\nc\r\nd\re')).toEqual({ text: 'a\tb\nc\r\nd\re', replaced: 0 });
  });

  it('replaces a run of controls between words with one space, and none beside a space or an end', () => {
    expect(cleanControlCharacters('co\u0002operate')).toEqual({ text: 'co operate', replaced: 1 });
    expect(cleanControlCharacters('word\u0002\u0003\u0004 next')).toEqual({ text: 'word next', replaced: 3 });
    expect(cleanControlCharacters('\u0000start end\u007f')).toEqual({ text: 'start end', replaced: 2 });
    expect(cleanControlCharacters('line\n\u000cnext page')).toEqual({ text: 'line\nnext page', replaced: 1 });
  });

  it('covers every C0 control but tab/newline/CR, DEL and every C1 control', () => {
    const controls: string[] = [];
    for (let code = 0; code <= 0x9f; code += 1) {
      if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code >= 0x7f)
        controls.push(String.fromCharCode(code));
    }
    const cleaned = cleanControlCharacters(`x${controls.join('y')}z`);
    expect(cleaned.replaced).toBe(controls.length);
    expect(cleaned.text).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/);
    // Ordinary text beyond the controls is untouched: accents, emoji, right-to-left script.
    const ordinary = 'Café ✓ 🚀 שלום — “quoted”\u00a0nbsp';
    expect(cleanControlCharacters(ordinary)).toEqual({ text: ordinary, replaced: 0 });
  });

  it('says nothing when nothing was replaced, and counts in the singular and plural', () => {
    expect(controlCharacterWarning('Line 1', 0)).toBeUndefined();
    expect(controlCharacterWarning('Line 1', 1)).toBe('Line 1: replaced 1 control character (kept tab and newline).');
    expect(controlCharacterWarning('Line 2', 3)).toMatch(/replaced 3 control characters/);
  });
});
