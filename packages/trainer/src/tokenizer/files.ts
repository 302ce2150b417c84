/** File names of a Hugging Face tokenizer in a model directory. */

/** The file a model directory must hold for loadTokenizer. */
export const TOKENIZER_FILE = 'tokenizer.json';
