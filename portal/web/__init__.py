"""Flask blueprints for the portal (people, staff, admin), server-rendered with Jinja2 and htmx."""
