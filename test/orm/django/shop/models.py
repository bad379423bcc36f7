# Authors and their books, keyed as Django keys models: an automatic
# primary key of DEFAULT_AUTO_FIELD (BigAutoField, app.py).
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)


class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    title = models.CharField(max_length=200)
