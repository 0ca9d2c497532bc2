"""`cairn review`: what a pull request's cards will do, what it may not do on its author's word, as Markdown."""
