"""The deploy tests' fixtures: a fresh PostgreSQL database and a Redis with a password."""

from tests.deploy.stack import database, redis_with_password

__all__ = ["database", "redis_with_password"]
