import json

with open("config.json") as f:
    config = json.load(f)

workers = config["workers"] * 2
print(f"{config['name']} listening on port {config['port']} with {workers} threads")
