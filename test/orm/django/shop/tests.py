# Run by app.py through Django's test runner, on the test database it
# makes (test_app): the fixture app.py dumped loads with its ids, and a new
# author gets a flake id, above 2^53.  What it saw goes back in SEEN.
from django.db import connection
from django.test import TestCase

from .models import Author

SEEN = {}


class FlakeIds(TestCase):
    fixtures = ["authors"]

    def test_flake_ids(self):
        loaded = sorted(str(a.id) for a in Author.objects.all())
        author = Author.objects.create(name="Barbara")
        SEEN.update(database=connection.settings_dict["NAME"],
                    loaded=loaded, new_id=str(author.id))
        self.assertGreater(author.id, 2**53)
