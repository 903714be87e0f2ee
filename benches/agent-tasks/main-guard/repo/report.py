from textstats import word_count

titles = ["a short title", "another one"]
print("total words:", sum(word_count(t) for t in titles))
