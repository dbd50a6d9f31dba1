/**
 * Cosine similarity of two vectors of the same length (-1..1), or undefined when either has no
 * direction. Computed in double precision over float32 inputs.
 */
export function cosineSimilarity(left: Float32Array, right: Float32Array): number | undefined {
  if (left.length !== right.length) throw new Error('Cosine similarity takes two vectors of the same length.');
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  for (let index = 0; index < left.length; index += 1) {
    const a = left[index]!;
    const b = right[index]!;
    dot += a * b;
    leftNorm += a * a;
    rightNorm += b * b;
  }
  if (leftNorm === 0 || rightNorm === 0) return undefined;
  return dot / Math.sqrt(leftNorm * rightNorm);
}
