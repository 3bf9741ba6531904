"""Prepared lessons (issue 29): the built-in ones (files), those users write (the db), and a
session walking one: to its next stop, its claims checked, its questions scored."""
