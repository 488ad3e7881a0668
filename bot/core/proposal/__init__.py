"""The proposal: what it says (assembly, text, wheel and requirement diffs) and what makes
its branch and commits the bot's."""
