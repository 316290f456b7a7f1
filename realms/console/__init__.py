"""The browser console: server-rendered pages (Django templates with htmx) over the same
services and selectors the API uses. Every page needs the operator's session."""
